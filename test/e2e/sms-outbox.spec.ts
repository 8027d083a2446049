import { DelayQueueService, RedisLimitEvents, type RedisLimitEvent } from '../../lib/index.js';
import { SmsGateway } from '../../sample-app/src/sms/sms-gateway.js';
import { SMS_OUTBOX } from '../../sample-app/src/sms/sms-outbox.js';
import { until } from '../harness/until.js';
import { withSampleApp } from './sample-app.js';

// The SMS outbox: POST /sms enqueues, SmsSender (a DelayQueue consumer with rateLimit keyed by the
// phone, one per minute) sends. The consumer is the same on both HTTP adapters: express only.
describe('the SMS outbox sends at most one SMS per phone per minute, whoever enqueued it', () => {
  const ctx = withSampleApp('express');
  const status = async (id: string) => (await ctx.sample.http.get(`/sms/${id}`)).body as { status: string };

  it('POST /sms is sent through the outbox', async () => {
    const queued = await ctx.sample.http.post('/sms').send({ phone: '+15555550100', text: 'Your code is 123456' });
    expect(queued.status).toBe(202);
    const { id } = queued.body as { id: string };
    await until(
      async () => (await status(id)).status === 'sent',
      10_000,
      () => `${id} not sent`,
    );
    expect(await status(id)).toMatchObject({ id, status: 'sent', sentAt: expect.any(String) });
  });

  it('a second SMS to one phone waits in the queue (no attempt spent) while another phone is served', async () => {
    // other parts of an app enqueue directly, past the HTTP funnel: the sender's limit still holds
    const queue = ctx.sample.app.get(DelayQueueService);
    const first = await queue.enqueue(SMS_OUTBOX, { phone: '+15555550100', text: 'one' }, { id: 'first' });
    const second = await queue.enqueue(SMS_OUTBOX, { phone: '+15555550100', text: 'two' }, { id: 'second' });
    const other = await queue.enqueue(SMS_OUTBOX, { phone: '+15555550199', text: 'three' }, { id: 'other' });
    await until(
      async () => (await status(first)).status === 'sent' && (await status(other)).status === 'sent',
      10_000,
      () => 'not sent',
    );
    await until(
      async () => (await queue.size(SMS_OUTBOX)).inFlight === 0,
      20_000,
      () => 'in flight',
    );
    expect(await status(second)).toEqual({ id: second, status: 'queued' });
    expect(await queue.size(SMS_OUTBOX)).toEqual({ scheduled: 1, inFlight: 0, dead: 0 });
  });

  it("waits out the gateway's 429 for a phone, as no attempt, and halves that phone's limit", async () => {
    const seen: RedisLimitEvent[] = [];
    const stop = ctx.sample.app.get(RedisLimitEvents).on((event) => seen.push(event));
    const later = () => seen.filter((event) => event.type === 'redis-limit.queue.retry-later');
    try {
      ctx.sample.app.get(SmsGateway).busyFor('+15555550177', 1_500);
      const id = await ctx.sample.app.get(DelayQueueService).enqueue(SMS_OUTBOX, { phone: '+15555550177', text: 'busy carrier' });
      await until(
        () => later().length === 1,
        20_000,
        () => `${id}: no RetryLater`,
      );
      // one SMS a minute halves to 1, never below; the SMS waits (its minute's permit was spent
      // on the refused call), not dead, and that was no attempt
      expect(later()[0]).toMatchObject({ id, attempt: 1, pausedKey: true, adaptiveLimit: 1 });
      expect(await status(id)).toEqual({ id, status: 'queued' });
      expect(seen.filter((event) => event.type === 'redis-limit.queue.retry' || event.type === 'redis-limit.queue.dead')).toEqual([]);
    } finally {
      stop();
    }
  });
});

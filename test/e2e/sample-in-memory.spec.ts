import { RedisLimitTestClock } from '../../lib/index.js';
import { OrdersService } from '../../sample-app/src/orders/orders.service.js';
import { until } from '../harness/until.js';
import { bootSample, inSequence, PLATFORMS, type SampleApp } from './sample-app.js';

// The sample app's own e2e test as its team would write it: on RedisLimitModule.forTesting(), no
// Redis, with the test clock standing in for the 30 minutes an unpaid order waits.
const TTL_MS = 30 * 60_000;

interface Order {
  id: string;
  item: string;
}

describe.each(PLATFORMS)('the sample app in memory on %s', (platform) => {
  let sample: SampleApp;
  let clock: RedisLimitTestClock;
  beforeEach(async () => {
    sample = await bootSample(platform, { inMemory: true });
    clock = sample.app.get(RedisLimitTestClock);
  });
  afterEach(() => sample.close());

  const order = (userId: string, item: string) => sample.http.post('/orders').set('x-user-id', userId).send({ item });
  const cancelled = async (userId: string) => (await sample.http.get('/orders/cancelled').set('x-user-id', userId)).body as Order[];

  it('holds 3 unpaid orders per user, and cancels them once they lapse unpaid', async () => {
    const responses = await inSequence(4, (i) => order('ann', `item-${i}`));
    expect(responses.map((r) => r.status)).toEqual([201, 201, 201, 429]);
    expect(responses[3]!.body.retryAfterMs).toBe(TTL_MS);
    const paid = responses[0]!.body as Order;
    expect((await sample.http.post(`/orders/${paid.id}/pay`).set('x-user-id', 'ann')).status).toBe(200);
    // the test's time stands still: nothing lapses until the clock moves
    expect(await cancelled('ann')).toEqual([]);
    clock.advance(TTL_MS);
    // (polled in the app, not over HTTP: the routes' own limits count every poll, and the clock
    // that would refill them stands still)
    const orders = sample.app.get(OrdersService);
    await until(
      () => orders.cancelledOf('ann').length === 2,
      20_000,
      () => JSON.stringify(orders.cancelledOf('ann')),
    );
    expect((await cancelled('ann')).map((o) => o.item).sort()).toEqual(['item-1', 'item-2']);
    expect((await order('ann', 'again')).status).toBe(201);
  });

  it('limits every route by the app-wide default: the 101st request within a minute is a 429', async () => {
    const statuses = (await inSequence(101, () => sample.http.get('/'))).map((r) => r.status);
    expect(statuses.slice(0, 100).every((status) => status === 200)).toBe(true);
    expect(statuses[100]).toBe(429);
    clock.advance(60_000);
    expect((await sample.http.get('/')).status).toBe(200);
  });
});

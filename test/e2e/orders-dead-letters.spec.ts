import { DelayQueueService } from '../../lib/index.js';
import { DEMO_ADMIN_KEY } from '../../sample-app/src/orders/admin-key.guard.js';
import { UNPAID_ORDER_EXPIRED } from '../../sample-app/src/orders/unpaid-orders.js';
import { until } from '../harness/until.js';
import { PLATFORMS, withSampleApp } from './sample-app.js';

// GET /admin/dead-cancellations and POST /admin/dead-cancellations/retry: lapse notices the
// canceller could not handle, behind x-admin-key (ADMIN_KEY, or the demo key when unset).

describe.each(PLATFORMS)('dead cancellations on %s', (platform) => {
  const ctx = withSampleApp(platform);
  const queue = () => ctx.sample.app.get(DelayQueueService);
  const admin = (path: string, key: string | null = DEMO_ADMIN_KEY) => {
    const get = ctx.sample.http.get(`/admin/dead-cancellations${path}`);
    return key === null ? get : get.set('x-admin-key', key);
  };
  /** A notice the canceller cannot parse: it dies after its two attempts. */
  const malformed = async (id: string) => {
    await queue().enqueue(UNPAID_ORDER_EXPIRED, { key: 'unpaid-orders:alice', field: id, value: '{not json' }, { id });
  };
  const deadCount = async () => (await queue().size(UNPAID_ORDER_EXPIRED)).dead;

  it('refuses without the admin key or with a wrong one: 401, on both routes', async () => {
    expect((await admin('', null)).status).toBe(401);
    expect((await admin('', 'guess')).status).toBe(401);
    expect((await ctx.sample.http.post('/admin/dead-cancellations/retry').send({})).status).toBe(401);
  });

  it('lists a notice that died, with its error, page by page; retried, it is delivered again', async () => {
    await malformed('n1');
    await malformed('n2');
    await until(
      async () => (await deadCount()) === 2,
      20_000,
      async () => `dead ${await deadCount()}`,
    );

    const first = await admin('?limit=1');
    expect(first.status).toBe(200);
    expect(first.body.messages).toHaveLength(1);
    expect(first.body.messages[0]).toMatchObject({
      queue: UNPAID_ORDER_EXPIRED,
      attempts: 2,
      error: expect.stringMatching(/^SyntaxError: /),
      payload: { value: '{not json' },
    });
    const second = await admin(`?limit=1&cursor=${encodeURIComponent(first.body.cursor)}`);
    expect(second.body.cursor).toBeNull();
    const ids = [first.body.messages[0].id, second.body.messages[0].id].sort();
    expect(ids).toEqual(['n1', 'n2']);
    const diedAt = second.body.messages[0].diedAt as number;

    const retried = await ctx.sample.http
      .post('/admin/dead-cancellations/retry')
      .set('x-admin-key', DEMO_ADMIN_KEY)
      .send({ ids: ['n2'] });
    expect(retried.status).toBe(200);
    expect(retried.body).toEqual({ retried: 1 });
    // still malformed: delivered twice more, it dies again, later
    await until(
      async () => ((await admin('')).body.messages as { id: string; diedAt: number }[]).some((m) => m.id === 'n2' && m.diedAt > diedAt),
      20_000,
      () => 'n2 not dead again',
    );

    const all = await ctx.sample.http.post('/admin/dead-cancellations/retry').set('x-admin-key', DEMO_ADMIN_KEY).send({});
    expect(all.body).toEqual({ retried: 2 });
  });

  it('answers 400 naming the bad argument', async () => {
    const tooMany = await admin('?limit=5000');
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toMatch(/opts.limit/);
    expect((await admin('?cursor=nope')).status).toBe(400);
    const badIds = await ctx.sample.http.post('/admin/dead-cancellations/retry').set('x-admin-key', DEMO_ADMIN_KEY).send({ ids: 'n1' });
    expect(badIds.status).toBe(400);
    expect(badIds.body.message).toMatch(/^ids must be an array/);
  });
});

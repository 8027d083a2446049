import { setTimeout as sleep } from 'node:timers/promises';
import type { Response, Test } from 'supertest';
import { DelayQueueService } from '../../lib/index.js';
import { inSequence, PLATFORMS, withSampleApp } from './sample-app.js';

// POST /orders: @MaxPending(3, { name: 'unpaid-orders', ttlMs, owner: x-user-id }); an order is
// the value of its slot; paying deletes the slot, and an unpaid one lapses after ttlMs.
const TTL_MS = 30 * 60_000;
// long enough for four requests to come before the first order lapses, on a cluster whose
// machine is loaded (the tests below wait for the lapse, not for a time)
const SHORT_TTL_MS = 5000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface UnpaidOrder {
  id: string;
  userId: string;
  item: string;
  quantity: number;
  createdAt: string;
  ttlMs: number;
}

describe.each(PLATFORMS)('unpaid orders on %s', (platform) => {
  function client(ctx: ReturnType<typeof withSampleApp>) {
    return {
      order: (userId: string, body: object = { item: 'book' }) => ctx.sample.http.post('/orders').set('x-user-id', userId).send(body),
      unpaid: async (userId: string) => {
        const response = await ctx.sample.http.get('/orders').set('x-user-id', userId);
        expect(response.status).toBe(200);
        return response.body as UnpaidOrder[];
      },
      pay: (userId: string, id: string) => ctx.sample.http.post(`/orders/${id}/pay`).set('x-user-id', userId),
    };
  }
  const statuses = (responses: Response[]) => responses.map((r) => r.status);

  describe('that lapse after 30 minutes', () => {
    const ctx = withSampleApp(platform);
    const { order, unpaid, pay } = client(ctx);

    it('schedules the nightly unpaid-orders summary at start: 02:30 in New York, one pending tick', async () => {
      const queue = ctx.sample.app.get(DelayQueueService);
      const [summary] = await queue.schedules('order-reports');
      expect(summary).toEqual({
        queue: 'order-reports',
        name: 'unpaid-summary',
        spec: { payload: null, cron: '30 2 * * *', tz: 'America/New_York' },
        nextRunAt: expect.any(Number),
        runs: 0,
      });
      expect(new Date(summary!.nextRunAt!).toLocaleTimeString('en-US', { timeZone: 'America/New_York', hour12: false })).toBe('02:30:00');
      expect((await queue.list('order-reports', { state: 'scheduled' })).messages.map((m) => m.id)).toEqual([`unpaid-summary@${summary!.nextRunAt}`]);
    });

    it('admits exactly 3 of 50 concurrent orders from one user; the other 47 are 429s with Retry-After', async () => {
      const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => order('alice', { item: `item-${i}` })));
      const created = responses.filter((r) => r.status === 201);
      const refused = responses.filter((r) => r.status === 429);
      expect(created).toHaveLength(3);
      expect(refused).toHaveLength(47);

      expect(created.map((r) => r.headers['x-ratelimit-remaining']).sort()).toEqual(['0', '1', '2']);
      for (const r of refused) {
        expect(r.body).toEqual({ statusCode: 429, message: expect.any(String), retryAfterMs: expect.any(Number) });
        // until the oldest of the three lapses: a whole ttl, less the few ms since it was reserved
        expect(r.body.retryAfterMs).toBeGreaterThan(TTL_MS - 10_000);
        expect(r.body.retryAfterMs).toBeLessThanOrEqual(TTL_MS);
        expect(r.headers['retry-after']).toBe(String(Math.ceil(r.body.retryAfterMs / 1000)));
        expect(r.headers['x-ratelimit-limit']).toBe('3');
        expect(r.headers['x-ratelimit-remaining']).toBe('0');
      }
      const ids = created.map((r) => r.body.id as string);
      expect((await unpaid('alice')).map((o) => o.id).sort()).toEqual([...ids].sort());
    });

    it('sends X-RateLimit headers counting down from 3, and the 4th order is refused', async () => {
      const responses = await inSequence(4, (i) => order('alice', { item: `item-${i}` }));
      expect(statuses(responses)).toEqual([201, 201, 201, 429]);
      expect(responses.map((r) => r.headers['x-ratelimit-limit'])).toEqual(['3', '3', '3', '3']);
      expect(responses.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['2', '1', '0', '0']);
      // every slot lives 30 min, so the cap is fully free again ~1800 s from now
      expect(responses[0]!.headers['x-ratelimit-reset']).toBe('1800');
      expect(responses[0]!.headers['retry-after']).toBeUndefined();
      expect(responses[3]!.headers['retry-after']).toBe(String(Math.ceil(responses[3]!.body.retryAfterMs / 1000)));
    });

    it('answers 201 with the order, whose id is the slot id', async () => {
      const before = Date.now();
      const created = await order('alice', { item: 'lamp', quantity: 2 });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        id: expect.stringMatching(UUID),
        userId: 'alice',
        item: 'lamp',
        quantity: 2,
        createdAt: expect.any(String),
      });
      const createdAt = Date.parse(created.body.createdAt);
      expect(createdAt).toBeGreaterThanOrEqual(before - 1);
      expect(createdAt).toBeLessThanOrEqual(Date.now());
      expect((await order('alice', { item: 'desk' })).body).toMatchObject({ item: 'desk', quantity: 1 });
    });

    it("keeps each user's orders apart", async () => {
      expect(statuses(await inSequence(4, () => order('alice')))).toEqual([201, 201, 201, 429]);
      const bob = await order('bob');
      expect(bob.status).toBe(201);
      expect(bob.headers['x-ratelimit-remaining']).toBe('2');
      expect(await unpaid('bob')).toEqual([expect.objectContaining({ id: bob.body.id, userId: 'bob' })]);
      expect(await unpaid('alice')).toHaveLength(3);
      expect(await unpaid('carol')).toEqual([]);
      expect((await order('alice')).status).toBe(429);
    });

    it('paying an order frees its slot at once; paying it again is a 404', async () => {
      const created = await inSequence(3, (i) => order('alice', { item: `item-${i}` }));
      expect(statuses(created)).toEqual([201, 201, 201]);
      expect((await order('alice')).status).toBe(429);

      const id = created[1]!.body.id as string;
      const paid = await pay('alice', id);
      expect(paid.status).toBe(200);
      expect(paid.body).toEqual({ id, paid: true });
      expect((await unpaid('alice')).map((o) => o.item)).toEqual(['item-0', 'item-2']);

      const next = await order('alice', { item: 'item-3' });
      expect(next.status).toBe(201);
      expect(next.headers['x-ratelimit-remaining']).toBe('0');

      const again = await pay('alice', id);
      expect(again.status).toBe(404);
      expect(again.body).toMatchObject({ statusCode: 404, message: expect.any(String) });
    });

    it("is a 404 to pay an unknown order, or another user's", async () => {
      const alices = await order('alice');
      expect(alices.status).toBe(201);
      expect((await pay('alice', '00000000-0000-4000-8000-000000000000')).status).toBe(404);
      expect((await pay('bob', alices.body.id)).status).toBe(404);
      expect(await unpaid('alice')).toHaveLength(1);
    });

    it('releases the slot when the handler throws on an invalid body', async () => {
      const first = await order('alice', { item: 'book' });
      expect(first.headers['x-ratelimit-remaining']).toBe('2');

      // the guard reserves a slot before the handler rejects the body: each 400 still sees it held
      const invalid = [{ item: '' }, { item: 'book', quantity: 0 }, { item: 'book', quantity: 1.5 }, { quantity: 2 }, {}];
      for (const body of invalid) {
        const bad = await order('alice', body);
        expect(bad.status).toBe(400);
        expect(bad.body).toMatchObject({ statusCode: 400, message: expect.any(String) });
        expect(bad.headers['x-ratelimit-remaining']).toBe('1');
        expect(await unpaid('alice')).toHaveLength(1);
      }

      const second = await order('alice', { item: 'pen' });
      expect(second.status).toBe(201);
      expect(second.headers['x-ratelimit-remaining']).toBe('1');
      expect(statuses(await inSequence(2, () => order('alice')))).toEqual([201, 429]);
    });

    it('lists unpaid orders oldest first, each with the ms it has left', async () => {
      for (const item of ['first', 'second', 'third']) {
        expect((await order('alice', { item })).status).toBe(201);
        await sleep(5); // distinct createdAt
      }
      const list = await unpaid('alice');
      expect(list.map((o) => o.item)).toEqual(['first', 'second', 'third']);
      for (const o of list) {
        expect(o).toEqual({
          id: expect.stringMatching(UUID),
          userId: 'alice',
          item: o.item,
          quantity: 1,
          createdAt: expect.any(String),
          ttlMs: expect.any(Number),
        });
        expect(o.ttlMs).toBeGreaterThan(TTL_MS - 10_000);
        expect(o.ttlMs).toBeLessThanOrEqual(TTL_MS);
      }
    });

    it.each([
      ['no x-user-id', undefined],
      ['an empty x-user-id', ''],
    ])('answers 400 for %s, on every route', async (_case, userId) => {
      const http = ctx.sample.http;
      const withUser = (req: Test) => (userId === undefined ? req : req.set('x-user-id', userId));
      const responses = [
        await withUser(http.post('/orders')).send({ item: 'book' }),
        await withUser(http.get('/orders')),
        await withUser(http.post('/orders/00000000-0000-4000-8000-000000000000/pay')),
      ];
      expect(statuses(responses)).toEqual([400, 400, 400]);
      expect(responses[0]!.body).toMatchObject({ statusCode: 400, message: expect.stringContaining('x-user-id') });
      // no owner, no slot: the guard sends no cap headers
      expect(responses[0]!.headers['x-ratelimit-limit']).toBeUndefined();
    });
  });

  describe("with 'draft' headers", () => {
    const ctx = withSampleApp(platform, { headers: 'draft' });
    const { order } = client(ctx);

    it('names the cap in RateLimit-Policy, its window being the ttl', async () => {
      const first = await order('alice');
      expect(first.status).toBe(201);
      expect(first.headers['ratelimit-policy']).toBe('"unpaid-orders";q=3;w=1800');
      expect(first.headers['ratelimit']).toBe('"unpaid-orders";r=2;t=1800');
      expect(first.headers['x-ratelimit-limit']).toBeUndefined();
    });
  });

  describe(`that lapse after ${SHORT_TTL_MS} ms`, () => {
    const ctx = withSampleApp(platform, { orderTtlMs: SHORT_TTL_MS });
    const { order, unpaid } = client(ctx);

    it('frees the slot of an order that lapses unpaid', async () => {
      expect(statuses(await inSequence(3, () => order('alice')))).toEqual([201, 201, 201]);
      const refused = await order('alice');
      expect(refused.status).toBe(429);
      expect(refused.body.retryAfterMs).toBeGreaterThan(0);
      expect(refused.body.retryAfterMs).toBeLessThanOrEqual(SHORT_TTL_MS);
      expect(refused.headers['retry-after']).toBe(String(Math.ceil(refused.body.retryAfterMs / 1000)));
      for (const o of await unpaid('alice')) {
        expect(o.ttlMs).toBeGreaterThan(0);
        expect(o.ttlMs).toBeLessThanOrEqual(SHORT_TTL_MS);
      }

      // a generous bound: the orders lapse after SHORT_TTL_MS
      let left = 3;
      // every 250 ms, as below: the route allows 100 reads a minute
      for (const deadline = Date.now() + 4 * SHORT_TTL_MS; left > 0 && Date.now() < deadline; await sleep(250)) {
        left = (await unpaid('alice')).length;
      }
      expect(left).toBe(0);

      const again = await order('alice');
      expect(again.status).toBe(201);
      expect(again.headers['x-ratelimit-remaining']).toBe('2');
    });

    it('cancels each order that lapses unpaid exactly once, and never a paid one', async () => {
      const lapsing = (await order('bob', { item: 'lamp' })).body as UnpaidOrder;
      const paid = (await order('bob', { item: 'desk' })).body as UnpaidOrder;
      expect((await ctx.sample.http.post(`/orders/${paid.id}/pay`).set('x-user-id', 'bob')).status).toBe(200);
      const cancelled = async () => (await ctx.sample.http.get('/orders/cancelled').set('x-user-id', 'bob')).body as UnpaidOrder[];
      // polled every 250 ms: at most 80 reads in the wait, within the route's 100 a minute (at 50
      // ms a quiet machine made about 100 before the lapse, and the next read was a 429)
      for (const deadline = Date.now() + 4 * SHORT_TTL_MS; (await cancelled()).length === 0 && Date.now() < deadline;) await sleep(250);
      await sleep(500); // time for a duplicate to show up, if there were one
      expect((await cancelled()).map((o) => [o.id, o.item])).toEqual([[lapsing.id, 'lamp']]);
    });
  });
});

import fc from 'fast-check';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { EXPIRY_MODES } from '../harness/expiring-hash.js';
import { withLimiterApp } from '../harness/limiter-app.js';

// Each mode against a plain model, at explicit times (the scripts' test hook): random sets,
// deletes, expires, capped sets, sweeps, reads and clock steps, on a pool of fields large enough to
// push a hash past the 128 fields where the bucket index takes over, with steps that cross 10 s
// buckets. Reads are steps of their own, not a check after every clock step: a read removes what
// has expired, and capped sets must also meet hashes that still hold expired fields.

interface Field {
  value: string;
  expiry: number; // -1: none
}

type Op =
  | { kind: 'set'; field: number; ttl: number | null; cap: number }
  | { kind: 'delete'; fields: number[] }
  | { kind: 'expire'; field: number; ttl: number }
  | { kind: 'sweep'; budget: number }
  | { kind: 'read'; field: number }
  | { kind: 'advance'; ms: number };

const POOL = 220;
const field = fc.integer({ min: 0, max: POOL - 1 });
const ttl = fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 40_000 }));
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 12, arbitrary: fc.record({ kind: fc.constant('set' as const), field, ttl: fc.option(ttl, { freq: 6 }), cap: fc.constantFrom(0, 0, 0, 5, 150) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), fields: fc.array(field, { minLength: 1, maxLength: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('expire' as const), field, ttl }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('sweep' as const), budget: fc.integer({ min: 1, max: 300 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('read' as const), field }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 15_000 })) }) },
);

describe.each(EXPIRY_MODES)('ExpiringHash %s mode agrees with a model', (mode) => {
  const ctx = withLimiterApp({ expiringHash: { mode, sweepIntervalMs: 0 } });
  const code = mode === 'native' ? 'n' : 'i';
  let run = 0;

  it('on random operation sequences', async () => {
    const scripts = ctx.app.moduleRef.get(RedisConnection).scripts;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 50, maxLength: 400 }), async (ops) => {
        run += 1;
        const keys = ['eh', 'ehb', 'ehn'].map((kind) => `${ctx.app.prefix}${kind}:{m${run}}`);
        // a day ahead of the server clock, so the key's own PEXPIREAT never fires during a run
        let now = Date.now() + 86_400_000;
        const model = new Map<string, Field>();
        const live = () => [...model].filter(([, f]) => f.expiry === -1 || f.expiry > now);
        const name = (i: number) => `field-${i}`;

        for (const step of ops) {
          if (step.kind === 'advance') {
            now += step.ms;
          } else if (step.kind === 'set') {
            const f = name(step.field);
            const value = `v${now}`;
            const [accepted, count] = (await scripts.run('hashSet', keys, [now, code, f, value, step.ttl ?? -1, step.cap, ''])) as number[];
            const wasLive = live().some(([k]) => k === f);
            const before = live().length;
            const expectAccepted = step.cap === 0 || wasLive || before < step.cap;
            expect(accepted).toBe(expectAccepted ? 1 : 0);
            if (expectAccepted) model.set(f, { value, expiry: step.ttl === null ? -1 : now + step.ttl });
            if (step.cap > 0) expect(count).toBe(live().length);
          } else if (step.kind === 'delete') {
            const fields = step.fields.map(name);
            const removed = await scripts.run('hashDelete', keys, [now, ...fields]);
            const expected = new Set(fields.filter((f) => live().some(([k]) => k === f))).size;
            expect(removed).toBe(expected);
            for (const f of fields) model.delete(f);
          } else if (step.kind === 'expire') {
            const f = name(step.field);
            const [done] = (await scripts.run('hashExpire', keys, [now, f, step.ttl])) as number[];
            const entry = live().find(([k]) => k === f);
            expect(done).toBe(entry ? 1 : 0);
            if (entry) entry[1].expiry = now + step.ttl;
          } else if (step.kind === 'sweep') {
            await scripts.run('hashSweep', keys, [now, step.budget]);
          } else {
            const probe = name(step.field);
            const [value, left] = (await scripts.run('hashGet', keys, [now, probe])) as [string | null, number];
            const entry = live().find(([k]) => k === probe)?.[1];
            expect(value).toBe(entry ? entry.value : null);
            expect(left).toBe(entry ? (entry.expiry === -1 ? -1 : entry.expiry - now) : -2);
            expect(await scripts.run('hashCount', keys, [now])).toBe(live().length);
          }
        }
        const flat = (await scripts.run('hashEntries', keys, [now])) as (string | number)[];
        const entries = new Map<string, [string, number]>();
        for (let i = 0; i < flat.length; i += 3) entries.set(String(flat[i]), [String(flat[i + 1]), Number(flat[i + 2])]);
        expect(entries).toEqual(new Map(live().map(([k, f]) => [k, [f.value, f.expiry === -1 ? -1 : f.expiry - now]])));
      }),
      { numRuns: 40 },
    );
  });
});

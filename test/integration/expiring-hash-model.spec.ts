import fc from 'fast-check';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { HashReply } from '../../lib/redis/replies.js';
import type { Reply, ScriptName } from '../../lib/redis/scripts.js';
import { EXPIRY_MODES } from '../harness/expiring-hash.js';
import { withLimiterApp } from '../harness/limiter-app.js';

// Each mode against a plain model, at explicit times (the scripts' test hook): random sets,
// deletes, expires, capped sets, sweeps, reads and clock steps, on a pool of fields large enough to
// push a hash past the 128 fields where the bucket index takes over, with steps that cross 10 s
// buckets. A fill step sets a run of fields with nothing reading between them, so a hash also
// crosses 128 fields while it holds fields that expired unread. Reads are steps of their own, not a
// check after every clock step: a read removes what has expired, and capped sets must also meet
// hashes that still hold expired fields. Native mode runs every step on two hashes, one written
// with HSETEX and one with HSET + HPEXPIREAT: their replies, and at the end what Redis holds, must
// be the same. Field names hold NUL and multi-byte characters (a compact hash is a string that
// carries its field's length), and a step rewrites a compact hash as earlier versions stored it (a
// hash of one field), which every script must still read.

interface Field {
  value: string;
  expiry: number; // -1: none
}

type Op =
  | { kind: 'set'; field: number; ttl: number | null; cap: number }
  | { kind: 'fill'; from: number; count: number; ttl: number | null }
  | { kind: 'delete'; fields: number[] }
  | { kind: 'expire'; field: number; ttl: number }
  | { kind: 'update'; field: number }
  | { kind: 'legacy' }
  | { kind: 'sweep'; budget: number }
  | { kind: 'read'; field: number }
  | { kind: 'advance'; ms: number };

const POOL = 220;
/** A bucket index with each chunk's names (a 2-byte length, then the name) sorted: a chunk lists
 * names in the order the hash gave them, which two write paths need not share. */
const sortedChunks = (index: Record<string, Buffer>) =>
  Object.fromEntries(
    Object.entries(index).map(([name, chunk]) => {
      if (!name.includes('.')) return [name, chunk.toString()]; // a bucket's chunk count
      const names: string[] = [];
      for (let pos = 0; pos < chunk.length; pos += 2 + chunk.readUInt16BE(pos))
        names.push(chunk.subarray(pos, pos + 2 + chunk.readUInt16BE(pos)).toString('hex'));
      return [name, names.sort().join(',')];
    }),
  );
/** hashEntries' flat reply (field, value, ttl, …) as triples in field order. */
const entryTriples = (reply: unknown) => {
  const flat = reply as unknown[];
  return Array.from({ length: flat.length / 3 }, (_, i) => flat.slice(3 * i, 3 * i + 3)).sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : 1));
};
const field = fc.integer({ min: 0, max: POOL - 1 });
const ttl = fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 40_000 }));
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({ kind: fc.constant('set' as const), field, ttl: fc.option(ttl, { freq: 6 }), cap: fc.constantFrom(0, 0, 0, 1, 2, 3, 5, 150) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('fill' as const), from: field, count: fc.integer({ min: 1, max: 140 }), ttl: fc.option(ttl, { freq: 6 }) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), fields: fc.array(field, { minLength: 1, maxLength: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('expire' as const), field, ttl }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('update' as const), field }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'legacy' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('sweep' as const), budget: fc.integer({ min: 1, max: 300 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('read' as const), field }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 15_000 })) }),
  },
);

describe.each(EXPIRY_MODES)('ExpiringHash %s mode agrees with a model', (mode) => {
  const ctx = withLimiterApp({ expiringHash: { mode, sweepIntervalMs: 0 } });
  const code = mode === 'native' ? 'n' : 'i';
  // hashSet's last ARGV: '1' writes native field expiry with HSETEX
  const paths = mode === 'native' ? ['1', '0'] : ['0'];
  let run = 0;

  it('on random operation sequences', async () => {
    const scripts = ctx.app.moduleRef.get(RedisConnection).scripts;
    await fc.assert(
      // small: every op names one of 3 fields, where owners mostly are (compact, expanded, capped)
      fc.asyncProperty(fc.array(op, { minLength: 50, maxLength: 400 }), fc.boolean(), async (ops, small) => {
        run += 1;
        const keySets = paths.map((path) => ['eh', 'ehb', 'ehn'].map((kind) => `${ctx.app.prefix}${kind}:{m${run}:${path}}`));
        // one step on every path; the replies must agree
        const step = async (script: ScriptName, args: (string | number)[]): Promise<Reply> => {
          const replies = await Promise.all(
            keySets.map((keys, i) => scripts.run(script, keys, script === 'hashSet' || script === 'hashUpdate' ? [...args, paths[i]!] : args)),
          );
          // hashEntries lists fields in the server's hash order, which two write paths need not share
          // (Valkey 9 keeps hashes with field expiry in a hash table)
          const comparable = script === 'hashEntries' ? replies.map(entryTriples) : replies;
          for (const reply of comparable.slice(1)) expect(reply).toEqual(comparable[0]);
          return replies[0]!;
        };
        // a day ahead of the server clock, so the key's own PEXPIREAT never fires during a run
        let now = Date.now() + 86_400_000;
        const model = new Map<string, Field>();
        const live = () => [...model].filter(([, f]) => f.expiry === -1 || f.expiry > now);
        const name = (i: number) => {
          const k = small ? i % 3 : i;
          return k % 2 === 0 ? `f\u0000é-${k}` : `field-${k}`;
        };

        for (const op of ops) {
          if (op.kind === 'advance') {
            now += op.ms;
          } else if (op.kind === 'set') {
            const f = name(op.field);
            const value = `v${now}`;
            const [accepted, count] = (await step('hashSet', [now, code, f, value, op.ttl ?? HashReply.NO_TTL, op.cap, ''])) as number[];
            const wasLive = live().some(([k]) => k === f);
            const before = live().length;
            const expectAccepted = op.cap === 0 || wasLive || before < op.cap;
            expect(accepted).toBe(expectAccepted ? HashReply.ACCEPTED : HashReply.FULL);
            if (expectAccepted) model.set(f, { value, expiry: op.ttl === null ? -1 : now + op.ttl });
            if (op.cap > 0) expect(count).toBe(live().length);
          } else if (op.kind === 'fill') {
            const fields = [...new Set(Array.from({ length: op.count }, (_, j) => name((op.from + j) % POOL)))];
            const value = `v${now}`;
            const replies = await Promise.all(fields.map((f) => step('hashSet', [now, code, f, value, op.ttl ?? HashReply.NO_TTL, 0, ''])));
            for (const [accepted] of replies as number[][]) expect(accepted).toBe(HashReply.ACCEPTED);
            for (const f of fields) model.set(f, { value, expiry: op.ttl === null ? -1 : now + op.ttl });
          } else if (op.kind === 'delete') {
            const fields = op.fields.map(name);
            const removed = await step('hashDelete', [now, ...fields]);
            const expected = new Set(fields.filter((f) => live().some(([k]) => k === f))).size;
            expect(removed).toBe(expected);
            for (const f of fields) model.delete(f);
          } else if (op.kind === 'expire') {
            const f = name(op.field);
            const [done] = (await step('hashExpire', [now, f, op.ttl])) as number[];
            const entry = live().find(([k]) => k === f);
            expect(done).toBe(entry ? HashReply.CHANGED : HashReply.NOT_LIVE);
            if (entry) entry[1].expiry = now + op.ttl;
          } else if (op.kind === 'update') {
            const f = name(op.field);
            const value = `u${now}`;
            const entry = live().find(([k]) => k === f);
            expect(await step('hashUpdate', [now, f, value])).toBe(entry ? HashReply.CHANGED : HashReply.NOT_LIVE);
            if (entry) entry[1].value = value;
          } else if (op.kind === 'legacy') {
            // a compact hash as earlier versions stored it: a hash of its one field, no meta field
            const raw = ctx.app.raw;
            for (const [hash] of keySets) {
              if ((await raw.type(hash!)) !== 'string') continue;
              const stored = (await raw.getBuffer(hash!))!;
              const length = stored.readUInt16BE(0);
              const at = await raw.call('PEXPIRETIME', hash!);
              await raw
                .multi()
                .del(hash!)
                .hset(hash!, stored.subarray(2, 2 + length), stored.subarray(2 + length))
                .pexpireat(hash!, Number(at))
                .exec();
            }
          } else if (op.kind === 'sweep') {
            await step('hashSweep', [now, op.budget, 3000]);
          } else {
            const probe = name(op.field);
            const [value, left] = (await step('hashGet', [now, probe])) as [string | null, number];
            const entry = live().find(([k]) => k === probe)?.[1];
            expect(value).toBe(entry ? entry.value : null);
            expect(left).toBe(entry ? (entry.expiry === -1 ? HashReply.NO_TTL : entry.expiry - now) : HashReply.ABSENT);
            expect(await step('hashCount', [now])).toBe(live().length);
          }
        }
        const flat = (await step('hashEntries', [now])) as (string | number)[];
        const entries = new Map<string, [string, number]>();
        for (let i = 0; i < flat.length; i += 3) entries.set(String(flat[i]), [String(flat[i + 1]), Number(flat[i + 2])]);
        expect(entries).toEqual(new Map(live().map(([k, f]) => [k, [f.value, f.expiry === -1 ? HashReply.NO_TTL : f.expiry - now]])));
        // what Redis holds is the same on every path: fields, values, field and key expiries, index
        const held = async ([hash, buckets]: string[]) => {
          if ((await ctx.app.raw.type(hash!)) === 'string') {
            return [await ctx.app.raw.getBuffer(hash!), await ctx.app.raw.call('PEXPIRETIME', hash!), await ctx.app.raw.hgetall(buckets!)];
          }
          const fields = await ctx.app.raw.hgetall(hash!);
          const names = Object.keys(fields);
          const expiries =
            mode === 'native' && names.length > 0 ? ((await ctx.app.raw.call('HPEXPIRETIME', hash!, 'FIELDS', names.length, ...names)) as number[]) : [];
          const index = sortedChunks(await ctx.app.raw.hgetallBuffer(buckets!));
          return [fields, Object.fromEntries(expiries.map((expiry, i) => [names[i], expiry])), await ctx.app.raw.call('PEXPIRETIME', hash!), index];
        };
        const states = await Promise.all(keySets.map(held));
        for (const state of states.slice(1)) expect(state).toEqual(states[0]);
      }),
      { numRuns: 40 },
    );
  });
});

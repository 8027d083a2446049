import { setTimeout as sleep } from 'node:timers/promises';
import { MAX_EXPIRY_MS } from '../../lib/expiring-hash/expiring-hash.input.js';
import { ExpiringHashKeys } from '../../lib/expiring-hash/expiring-hash.keys.js';
import { ExpiringHashService } from '../../lib/index.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { HashReply } from '../../lib/redis/replies.js';
import { EXPIRY_CASES, eventually } from '../harness/expiring-hash.js';
import { withLimiterApp } from '../harness/limiter-app.js';
import { FIELD_EXPIRY_FLAVORS } from '../harness/redis-binary.js';
import { currentFlavor } from '../harness/redis-server.js';

describe.each(EXPIRY_CASES)('ExpiringHashService, $name', ({ mode, hsetex, server }) => {
  // no background sweep here: reads alone must never show an expired field
  const ctx = withLimiterApp({ expiringHash: { mode, sweepIntervalMs: 0 } }, server);
  const hash = () => ctx.app.moduleRef.get(ExpiringHashService);
  let n = 0;
  const fresh = () => `user-${(n += 1)}`;
  /** ms until a full hash expires: native mode carries it on the meta field "", index mode on the key. */
  const expiryOf = async (hashKey: string) =>
    mode === 'native' ? Number(((await ctx.app.raw.call('HPTTL', hashKey, 'FIELDS', 1, '')) as number[])[0]) : ctx.app.raw.pttl(hashKey);

  it('uses the mode asked for', async () => {
    expect(await hash().mode()).toBe(mode);
  });

  it('get / ttl / getAll / entries of live fields, with exact ttls', async () => {
    const key = fresh();
    await hash().set(key, 'a', 'alpha', 60_000);
    await hash().set(key, 'b', 'beta');
    expect(await hash().get(key, 'a')).toBe('alpha');
    const ttl = await hash().ttl(key, 'a');
    expect(ttl).toBeGreaterThan(59_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    expect(await hash().ttl(key, 'b')).toBe(-1);
    expect(await hash().ttl(key, 'nope')).toBe(-2);
    expect(await hash().get(key, 'nope')).toBeNull();
    expect(await hash().getAll(key)).toEqual({ a: 'alpha', b: 'beta' });
    const entries = await hash().entries(key);
    expect(entries.map((e) => [e.field, e.value, e.ttlMs === -1 ? -1 : e.ttlMs > 59_000])).toEqual(
      expect.arrayContaining([
        ['a', 'alpha', true],
        ['b', 'beta', -1],
      ]),
    );
    expect(await hash().count(key)).toBe(2);
  });

  it('never shows an expired field, whatever was swept', async () => {
    const key = fresh();
    await hash().set(key, 'short', 'x', 40);
    await hash().set(key, 'long', 'y', 60_000);
    await hash().set(key, 'forever', 'z');
    await sleep(120);
    expect(await hash().get(key, 'short')).toBeNull();
    expect(await hash().ttl(key, 'short')).toBe(-2);
    expect(await hash().getAll(key)).toEqual({ long: 'y', forever: 'z' });
    expect((await hash().entries(key)).map((e) => e.field).sort()).toEqual(['forever', 'long']);
    expect(await hash().count(key)).toBe(2);
    expect(await hash().expire(key, 'short', 1000)).toBe(false);
    expect(await hash().update(key, 'short', 'again')).toBe(false);
    expect(await hash().delete(key, 'short')).toBe(0);
  });

  it('re-set replaces value and ttl, both ways', async () => {
    const key = fresh();
    await hash().set(key, 'f', 'one', 50);
    await hash().set(key, 'f', 'two');
    expect(await hash().ttl(key, 'f')).toBe(-1);
    await sleep(100);
    expect(await hash().get(key, 'f')).toBe('two');
    await hash().set(key, 'f', 'three', 30_000);
    expect(await hash().get(key, 'f')).toBe('three');
    expect(await hash().ttl(key, 'f')).toBeGreaterThan(29_000);
    await hash().set(key, 'f', 'four', 40);
    await sleep(100);
    expect(await hash().get(key, 'f')).toBeNull();
    expect(await hash().count(key)).toBe(0);
  });

  it('expire sets a new ttl on a live field and update keeps it', async () => {
    const key = fresh();
    await hash().set(key, 'f', 'v');
    expect(await hash().expire(key, 'f', 20_000)).toBe(true);
    expect(await hash().ttl(key, 'f')).toBeGreaterThan(19_000);
    expect(await hash().update(key, 'f', 'w')).toBe(true);
    expect(await hash().get(key, 'f')).toBe('w');
    expect(await hash().ttl(key, 'f')).toBeGreaterThan(19_000);
    expect(await hash().expire(key, 'f', 40)).toBe(true);
    await sleep(100);
    expect(await hash().get(key, 'f')).toBeNull();
    expect(await hash().expire(fresh(), 'f', 1000)).toBe(false);
  });

  it('delete counts the live fields it removed, once each', async () => {
    const key = fresh();
    await hash().set(key, 'a', '1', 60_000);
    await hash().set(key, 'b', '2');
    expect(await hash().delete(key, 'a', 'a', 'missing')).toBe(1);
    expect(await hash().count(key)).toBe(1);
    expect(await hash().delete(key, 'b')).toBe(1);
    // the last field gone, the hash and its index go too
    expect(await ctx.app.raw.exists(`${ctx.app.prefix}eh:{${key}}`, `${ctx.app.prefix}ehb:{${key}}`)).toBe(0);
  });

  it('count stays exact while many fields expire at once (small and indexed hashes)', async () => {
    for (const size of [40, 400]) {
      const key = fresh();
      // every field starts long-lived (so a slow machine cannot expire one early), then half get a short ttl
      const ttlOf = (i: number) => (i % 4 === 0 ? undefined : 60_000);
      await Promise.all(Array.from({ length: size }, (_, i) => hash().set(key, `f${i}`, `v${i}`, ttlOf(i))));
      expect(await hash().count(key)).toBe(size);
      const short = Array.from({ length: size }, (_, i) => i).filter((i) => i % 4 >= 2);
      expect(await Promise.all(short.map((i) => hash().expire(key, `f${i}`, 50 + (i % 7))))).not.toContain(false);
      await sleep(150);
      expect(await hash().count(key)).toBe(size / 2);
      expect(Object.keys(await hash().getAll(key))).toHaveLength(size / 2);
    }
  });

  it('count stays exact when fields expired before the write that indexes the hash', async () => {
    // explicit times, a day ahead of the server clock (the server reclaims no native field itself);
    // a loaded machine does the same to the 100 ms fields the sweep test writes in batches of 500
    const connection = ctx.app.moduleRef.get(RedisConnection);
    const keys = new ExpiringHashKeys(connection.keys, 16).hash(fresh());
    const code = mode === 'native' ? 'n' : 'i';
    const start = Date.now() + 86_400_000;
    const set = (now: number, field: string, ttlMs: number) =>
      connection.scripts.call('hashSet', { keys, args: { now, mode: code, field, value: 'v', ttlMs, cap: 0, notify: '', hsetex: hsetex ? '1' : '0' } });
    await set(start, 'keeper', HashReply.NO_TTL);
    // 127 fields and the keeper: small, scanned whole; nothing reads it while they expire
    for (let i = 0; i < 127; i++) await set(start, `f${i}`, 100);
    expect(await ctx.app.raw.exists(keys.index)).toBe(0);
    // the 128th grows it past the 128 fields where the bucket index takes over
    await set(start + 200, 'last', 100);
    expect(await ctx.app.raw.exists(keys.index)).toBe(1);
    expect(await connection.scripts.call('hashCount', { keys, args: { now: start + 200 } })).toBe(2);
    expect(await connection.scripts.call('hashCount', { keys, args: { now: start + 400 } })).toBe(1);
    expect(await ctx.app.raw.hlen(keys.hash)).toBe(2); // the keeper and the meta field
  });

  it('the hash key expires with its latest field, and not while a field has no ttl', async () => {
    const key = fresh();
    const hashKey = `${ctx.app.prefix}eh:{${key}}`;
    await hash().set(key, 'a', '1', 5_000);
    await hash().set(key, 'b', '2', 20_000);
    let pttl = await expiryOf(hashKey);
    expect(pttl).toBeGreaterThan(19_000);
    expect(pttl).toBeLessThanOrEqual(20_000);
    await hash().set(key, 'c', '3');
    expect(await expiryOf(hashKey)).toBe(-1);
    await hash().delete(key, 'c');
    pttl = await expiryOf(hashKey);
    expect(pttl).toBeGreaterThan(19_000);
    // native mode: the key carries none, the server deletes it with its last field
    if (mode === 'native') expect(await ctx.app.raw.pttl(hashKey)).toBe(-1);
    else expect(await ctx.app.raw.pttl(hashKey)).toBeGreaterThan(19_000);
  });

  it('a hash of one field with a ttl is compact: one string key, the field length-prefixed, the key expires with it', async () => {
    const key = fresh();
    const raw = ctx.app.raw;
    const stored = `${ctx.app.prefix}eh:{${key}}`;
    // a field may hold any character, NUL included: its length says where the value starts
    const only = 'only\u0000é';
    const compact = async () => {
      const bytes = (await raw.getBuffer(stored))!;
      const length = bytes.readUInt16BE(0);
      return [await raw.type(stored), bytes.subarray(2, 2 + length).toString(), bytes.subarray(2 + length).toString()];
    };
    await hash().setIfBelow(key, only, 'value', 60_000, 3);
    expect(await compact()).toEqual(['string', only, 'value']);
    const pttl = await raw.pttl(stored);
    expect(pttl).toBeGreaterThan(59_000);
    expect(Math.abs((await hash().ttl(key, only)) - pttl)).toBeLessThan(1000);
    expect(await hash().entries(key)).toEqual([{ field: only, value: 'value', ttlMs: expect.any(Number) }]);
    expect(await hash().count(key)).toBe(1);
    // the one field again (value and ttl), updated, given a new ttl: still one string
    await hash().setIfBelow(key, only, 'value 2', 90_000, 3);
    expect(await compact()).toEqual(['string', only, 'value 2']);
    expect(await raw.pttl(stored)).toBeGreaterThan(89_000);
    expect(await hash().update(key, only, 'value 3')).toBe(true);
    expect(await hash().expire(key, only, 95_000)).toBe(true);
    expect(await compact()).toEqual(['string', only, 'value 3']);
    expect(await raw.pttl(stored)).toBeGreaterThan(94_000);
    // refused at a cap of 1 without touching it
    expect(await hash().setIfBelow(key, 'other', 'v', 60_000, 1)).toEqual({ accepted: false, count: 1 });
    expect(await compact()).toEqual(['string', only, 'value 3']);
    // a second field: a hash in the full layout, the first field kept with its ttl
    expect(await hash().setIfBelow(key, 'other', 'v', 30_000, 3)).toEqual({ accepted: true, count: 2 });
    expect(await raw.type(stored)).toBe('hash');
    expect((await raw.hkeys(stored)).sort()).toEqual(['', only, 'other'].sort());
    expect(await hash().get(key, only)).toBe('value 3');
    expect(await hash().ttl(key, only)).toBeGreaterThan(94_000);
    expect(await expiryOf(stored)).toBeGreaterThan(94_000);
    expect(await hash().entries(key)).toHaveLength(2);
    // compact again only when created anew
    expect(await hash().delete(key, only, 'other')).toBe(2);
    expect(await raw.exists(stored)).toBe(0);
    await hash().set(key, 'again', 'v', 60_000);
    expect(await raw.type(stored)).toBe('string');
    expect(await hash().delete(key, 'again')).toBe(1);
    expect(await raw.exists(stored)).toBe(0);
  });

  it('reads a compact hash as earlier versions stored it (a hash of one field), and rewrites it as a string', async () => {
    const raw = ctx.app.raw;
    const legacy = async (value: string, ttlMs = 60_000) => {
      const key = fresh();
      const stored = `${ctx.app.prefix}eh:{${key}}`;
      await raw.multi().hset(stored, 'order-1', value).pexpire(stored, ttlMs).exec();
      return { key, stored };
    };
    const a = await legacy('unpaid');
    expect(await hash().get(a.key, 'order-1')).toBe('unpaid');
    expect(await hash().ttl(a.key, 'order-1')).toBeGreaterThan(59_000);
    expect(await hash().entries(a.key)).toEqual([{ field: 'order-1', value: 'unpaid', ttlMs: expect.any(Number) }]);
    expect(await hash().count(a.key)).toBe(1);
    expect(await hash().setIfBelow(a.key, 'order-2', 'v', 60_000, 1)).toEqual({ accepted: false, count: 1 });
    expect(await hash().expire(a.key, 'order-1', 70_000)).toBe(true);
    expect(await raw.pttl(a.stored)).toBeGreaterThan(69_000);
    expect(await raw.type(a.stored)).toBe('hash'); // reads and expire leave it as it is
    expect(await hash().update(a.key, 'order-1', 'paid?')).toBe(true);
    expect(await raw.type(a.stored)).toBe('string'); // a write rewrites it, ttl kept
    expect(await raw.pttl(a.stored)).toBeGreaterThan(69_000);
    expect(await hash().get(a.key, 'order-1')).toBe('paid?');
    // a second field expands it into the full layout; deleting its field deletes it
    const b = await legacy('unpaid');
    expect(await hash().setIfBelow(b.key, 'order-2', 'v', 30_000, 3)).toEqual({ accepted: true, count: 2 });
    expect(await hash().getAll(b.key)).toEqual({ 'order-1': 'unpaid', 'order-2': 'v' });
    expect(await hash().ttl(b.key, 'order-1')).toBeGreaterThan(59_000);
    const c = await legacy('unpaid');
    expect(await hash().delete(c.key, 'order-1')).toBe(1);
    expect(await raw.exists(c.stored)).toBe(0);
    const d = await legacy('unpaid');
    await hash().set(d.key, 'order-1', 'again', 5_000);
    expect(await raw.type(d.stored)).toBe('string');
    expect(await hash().ttl(d.key, 'order-1')).toBeLessThanOrEqual(5_000);
  });

  it('an abandoned hash vanishes by itself, with nothing sweeping or reading it', async () => {
    const key = fresh();
    await hash().set(key, 'a', '1', 40);
    await hash().set(key, 'b', '2', 80);
    await hash().set(key, 'c', '3');
    await hash().delete(key, 'c');
    await eventually(async () => (await ctx.app.raw.exists(`${ctx.app.prefix}eh:{${key}}`)) === 0);
  });

  it('setIfBelow caps live fields and frees capacity as fields expire', async () => {
    const SHORT_MS = 3_000;
    const key = fresh();
    expect(await hash().setIfBelow(key, 's1', 'v', 60_000, 2)).toEqual({ accepted: true, count: 1 });
    // s2 lives long enough for a loaded machine to make the next four calls before it expires
    expect(await hash().setIfBelow(key, 's2', 'v', SHORT_MS, 2)).toEqual({ accepted: true, count: 2 });
    expect(await hash().setIfBelow(key, 's3', 'v', 60_000, 2)).toEqual({ accepted: false, count: 2 });
    // re-setting a live field is always accepted and does not grow the count
    expect(await hash().setIfBelow(key, 's1', 'w', 60_000, 2)).toEqual({ accepted: true, count: 2 });
    const refused = await hash().reserve(key, 's3', 'v', 60_000, 2);
    expect(refused.accepted).toBe(false);
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(SHORT_MS);
    expect(refused.resetMs).toBeGreaterThan(59_000);
    // once s2 has expired its place is free: asked until then (a refusal is the only other answer)
    let last: { accepted: boolean; count: number } | undefined;
    await eventually(async () => {
      last = await hash().setIfBelow(key, 's3', 'v', 60_000, 2);
      if (!last.accepted) expect(last).toEqual({ accepted: false, count: 2 });
      return last.accepted;
    });
    expect(last).toEqual({ accepted: true, count: 2 });
    expect(Object.keys(await hash().getAll(key)).sort()).toEqual(['s1', 's3']);
  });

  it('setIfBelow is atomic: 50 concurrent callers, cap 3, exactly 3 accepted', async () => {
    const key = fresh();
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => hash().setIfBelow(key, `slot-${i}`, 'v', 60_000, 3)));
    expect(results.filter((r) => r.accepted)).toHaveLength(3);
    expect(results.every((r) => r.count <= 3)).toBe(true);
    expect(await hash().count(key)).toBe(3);
  });

  it('refuses a ttl whose expiry the server could not keep, before writing anything (issue 13 #7)', async () => {
    const key = fresh();
    await hash().set(key, 'kept', 'v', 60_000);
    for (const write of [
      () => hash().set(key, 'f', 'v', 2 ** 48),
      () => hash().setIfBelow(key, 'f', 'v', 2 ** 48, 2),
      () => hash().expire(key, 'kept', 2 ** 48),
    ]) {
      await expect(write()).rejects.toThrow(RangeError);
      await expect(write()).rejects.toThrow(/^ttlMs must be at most \d+/);
    }
    expect(await hash().getAll(key)).toEqual({ kept: 'v' });
    expect(await ctx.app.raw.type(`${ctx.app.prefix}eh:{${key}}`)).toBe('string'); // compact: one field with a ttl
    expect(await hash().ttl(key, 'kept')).toBeGreaterThan(59_000);
    // the cap still counts what is there: nothing slipped in beside it
    expect(await hash().setIfBelow(key, 'g', 'v', 60_000, 1)).toEqual({ accepted: false, count: 1 });
  });

  it('the scripts refuse an expiry past 2^46 - 1 ms by their own clock, and take exactly that one', async () => {
    const scripts = ctx.app.moduleRef.get(RedisConnection).scripts;
    const key = fresh();
    const keys = new ExpiringHashKeys(ctx.app.moduleRef.get(RedisConnection).keys, 16).hash(key);
    const now = Date.now();
    const code = mode === 'native' ? 'n' : 'i';
    const set = (field: string, ttlMs: number) =>
      scripts.call('hashSet', { keys, args: { now, mode: code, field, value: 'v', ttlMs, cap: 0, notify: '', hsetex: hsetex ? '1' : '0' } });
    const get = (field: string) => scripts.call('hashGet', { keys, args: { now, field } });
    const nothing = { registerAt: HashReply.NOTHING_DUE, notifyAt: HashReply.NOTHING_DUE };
    const outOfRange = { verdict: HashReply.OUT_OF_RANGE, count: HashReply.NO_CAP, oldestMs: 0, newestMs: 0, ...nothing };
    expect(await set('f', MAX_EXPIRY_MS - now + 1)).toEqual(outOfRange);
    expect(await ctx.app.raw.exists(keys.hash)).toBe(0);
    expect((await set('f', MAX_EXPIRY_MS - now)).verdict).toBe(HashReply.ACCEPTED);
    expect(await get('f')).toEqual({ value: 'v', ttlMs: MAX_EXPIRY_MS - now });
    expect(await scripts.call('hashExpire', { keys, args: { now, field: 'f', ttlMs: MAX_EXPIRY_MS - now + 1 } })).toEqual({
      verdict: HashReply.OUT_OF_RANGE,
      ...nothing,
    });
    expect(await get('f')).toEqual({ value: 'v', ttlMs: MAX_EXPIRY_MS - now });
    // a second field: the first leaves the compact layout, both now with field expiry (native mode)
    expect(await set('g', MAX_EXPIRY_MS - now + 1)).toEqual(outOfRange);
    expect((await set('g', MAX_EXPIRY_MS - now)).verdict).toBe(HashReply.ACCEPTED);
    for (const field of ['f', 'g']) expect(await get(field)).toEqual({ value: 'v', ttlMs: MAX_EXPIRY_MS - now });
  });

  it('keeps values byte for byte, and each hostile field apart', async () => {
    const key = 'a{b}c:\n ünï 🚦';
    const fields = ['{x}', '}{', 'a:b', '%3A', 'line\nbreak', '🚦', 'x'.repeat(10 * 1024), '\u0000nul', ' '];
    for (const [i, field] of fields.entries()) await hash().set(key, field, `${i}:${field}`, 60_000);
    for (const [i, field] of fields.entries()) expect(await hash().get(key, field)).toBe(`${i}:${field}`);
    expect(await hash().count(key)).toBe(fields.length);
    const binary = '\u0000\u00ff\uffff' + 'é'.repeat(100);
    await hash().set(key, 'bin', binary);
    expect(await hash().get(key, 'bin')).toBe(binary);
    await hash().set(key, 'empty', '');
    expect(await hash().get(key, 'empty')).toBe('');
  });
});

describe('ExpiringHashService input checks', () => {
  const ctx = withLimiterApp({ expiringHash: { sweepIntervalMs: 0 } });
  const hash = () => ctx.app.moduleRef.get(ExpiringHashService);

  it('a ttl that is not a number is a TypeError naming ttlMs', async () => {
    await expect(hash().set('k', 'f', 'v', '100' as unknown as number)).rejects.toThrow(new TypeError('ttlMs must be a positive integer, got "100"'));
  });

  it.each([0, -1, NaN, Infinity, 1.5])('ttl %p is a RangeError naming ttlMs', async (ttl) => {
    await expect(hash().set('k', 'f', 'v', ttl)).rejects.toThrow(RangeError);
    await expect(hash().set('k', 'f', 'v', ttl)).rejects.toThrow(/ttlMs/);
    await expect(hash().expire('k', 'f', ttl)).rejects.toThrow(/ttlMs/);
    await expect(hash().setIfBelow('k', 'f', 'v', ttl, 3)).rejects.toThrow(/ttlMs/);
  });

  it.each([0, -2, 2.5, NaN])('max %p is a RangeError naming max', async (max) => {
    await expect(hash().setIfBelow('k', 'f', 'v', 1000, max)).rejects.toThrow(/max/);
  });

  it('rejects non-string values, empty or oversized fields and lone surrogates with errors naming them', async () => {
    await expect(hash().set('k', 'f', 42 as unknown as string)).rejects.toThrow(new TypeError('value must be a string, got 42'));
    await expect(hash().set('k', 'f', { a: 1 } as unknown as string)).rejects.toThrow(/value must be a string/);
    await expect(hash().set('k', '', 'v')).rejects.toThrow(/field must be a non-empty string/);
    await expect(hash().set('', 'f', 'v')).rejects.toThrow(/key must be a non-empty string/);
    await expect(hash().set('k', 'x'.repeat(70_000), 'v')).rejects.toThrow(RangeError);
    await expect(hash().set('k', 'a\uD800', 'v')).rejects.toThrow(/field must be well-formed/);
    await expect(hash().set('k', 'f', 'a\uDC00')).rejects.toThrow(/value must be well-formed/);
    await expect(hash().delete('k', 'ok', '')).rejects.toThrow(/fields\[1\]/);
    await expect(hash().count('k')).resolves.toBe(0);
  });

  it('checks notify: a queue name, and only with a ttl', async () => {
    await expect(hash().set('k', 'f', 'v', undefined, { notify: 'q' })).rejects.toThrow(/opts\.notify needs a ttlMs/);
    await expect(hash().set('k', 'f', 'v', 1000, { notify: '' })).rejects.toThrow(/opts\.notify must be a non-empty string/);
    await expect(hash().set('k', 'f', 'v', 1000, { notify: 'x'.repeat(2000) })).rejects.toThrow(RangeError);
    expect(await hash().get('k', 'f')).toBeNull();
  });

  it('picks native mode exactly where the server has HPEXPIRE', async () => {
    const hasHpexpire = Array.isArray(((await ctx.app.raw.call('COMMAND', 'INFO', 'HPEXPIRE')) as unknown[])[0]);
    expect(await hash().mode()).toBe(hasHpexpire ? 'native' : 'index');
    expect(hasHpexpire).toBe(FIELD_EXPIRY_FLAVORS.includes(currentFlavor()));
  });
});

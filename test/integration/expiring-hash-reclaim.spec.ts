import { setTimeout as sleep } from 'node:timers/promises';
import { ExpiringHashService } from '../../lib/index.js';
import { EXPIRY_MODES } from '../harness/expiring-hash.js';
import { limiterModule } from '../harness/limiter-app.js';
import { RedisNode, type TestRedis } from '../harness/redis-server.js';

// A field that has expired by native field expiry stays counted in HLEN until the server's active
// expiry reclaims it, which a busy server does late; Valkey 9 also ignores HDEL of such a field.
// The server here never reclaims on its own (active expiry off), so every count must come from
// fields the scripts know to be live. Index mode runs alike, as the control.

describe.each(EXPIRY_MODES)('ExpiringHash %s mode, while the server has not reclaimed expired fields', (mode) => {
  let redis: TestRedis;
  let app: Awaited<ReturnType<typeof limiterModule>>;
  let hash: ExpiringHashService;
  beforeAll(async () => {
    redis = await RedisNode.start({ own: true, args: ['--enable-debug-command', 'local'] });
    app = await limiterModule(redis, { expiringHash: { mode, sweepIntervalMs: 0 } });
    hash = app.moduleRef.get(ExpiringHashService);
    await app.raw.call('DEBUG', 'SET-ACTIVE-EXPIRE', '0');
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  // 4 fields are scanned whole on every look; 300 are indexed and walked by bucket
  it.each([4, 300])('%i fields: count, setIfBelow and getAll see only live fields, every time', async (size) => {
    const key = `owner-${size}`;
    const half = size / 2;
    // the long-lived half first, so no field can expire before its short-lived twin is written
    for (let i = 0; i < half; i++) await hash.set(key, `live-${i}`, 'v', i % 2 === 0 ? undefined : 3_600_000);
    expect(await hash.count(key)).toBe(half);
    for (let i = 0; i < half; i++) await hash.set(key, `short-${i}`, 'v', 20);
    await sleep(100);
    expect(await hash.count(key)).toBe(half);
    // the second look is the one that trusted HLEN
    expect(await hash.count(key)).toBe(half);
    expect(await hash.setIfBelow(key, 'one-more', 'v', 60_000, half + 1)).toEqual({ accepted: true, count: half + 1 });
    expect(await hash.setIfBelow(key, 'over', 'v', 60_000, half + 1)).toEqual({ accepted: false, count: half + 1 });
    expect(Object.keys(await hash.getAll(key))).toHaveLength(half + 1);
    expect(await hash.delete(key, 'short-0', 'one-more')).toBe(1);
    expect(await hash.count(key)).toBe(half);
  });
});

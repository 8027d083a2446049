import { loadScripts } from '../../lib/redis/scripts.js';
import { COMPILED_SCRIPTS } from '../../lib/redis/scripts.generated.js';
import { TestRedis } from '../harness/redis-server.js';
import { limiterModule } from '../harness/limiter-app.js';

describe('Lua scripts', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());

  it('the SHA the library uses is the one Redis computes for the file (no drift)', async () => {
    const raw = redis.client();
    try {
      for (const script of loadScripts()) {
        expect(await raw.script('LOAD', script.source)).toBe(script.sha1);
        expect(script.command).toContain(script.sha1.slice(0, 10));
      }
    } finally {
      raw.disconnect();
    }
  });

  it('splices each include once and leaves no include line behind', () => {
    const { source } = COMPILED_SCRIPTS['rate-limit/decide.lua'];
    expect(source).not.toMatch(/@include/);
    expect(source.match(/local function now_ms/g)).toHaveLength(1);
    expect(source.match(/local sliding_window = /g)).toHaveLength(1);
  });

  it('takes the key count from the header', () => {
    const decide = loadScripts().find((s) => s.name === 'rateLimitDecide')!;
    expect(decide.numberOfKeys).toBeUndefined(); // KEYS[1..n]: one per stacked limit
  });

  it('keeps working after SCRIPT FLUSH (NOSCRIPT is answered by sending the script again)', async () => {
    const app = await limiterModule(redis);
    try {
      const policy = { limit: 2, windowMs: 60_000 };
      expect((await app.limiter.consume('k', policy)).remaining).toBe(1);
      await redis.onEveryMaster('SCRIPT', 'FLUSH');
      expect((await app.limiter.consume('k', policy)).remaining).toBe(0);
    } finally {
      await app.close();
    }
  });
});

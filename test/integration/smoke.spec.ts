import { TestRedis } from '../harness/redis-server.js';
import { limiterModule } from '../harness/limiter-app.js';

describe('smoke', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());

  it('consumes', async () => {
    const app = await limiterModule(redis);
    const policy = { limit: 2, windowMs: 1000 };
    const a = await app.limiter.consume('k', policy);
    const b = await app.limiter.consume('k', policy);
    const c = await app.limiter.consume('k', policy);
    expect([a.allowed, b.allowed, c.allowed]).toEqual([true, true, false]);
    console.log(a, b, c);
    await app.close();
  });
});

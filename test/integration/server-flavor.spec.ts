import { Redis } from 'ioredis';
import { RedisNode } from '../harness/redis-server.js';

// Each integration project runs against the server it names: check that it really does.
describe('the server under test', () => {
  it('is the flavor this project asked for', async () => {
    const redis = await RedisNode.start({ own: true });
    const client = new Redis(redis.url);
    try {
      const info = await client.info('server');
      const expected = {
        redis7: /redis_version:7\./,
        redis8: /redis_version:8\./,
        valkey8: /valkey_version:8\./,
        valkey9: /valkey_version:9\./,
        'redis8-sid': /redis_version:8\.0\.([6-9]|\d\d)\b/,
      }[redis.flavor];
      expect(info).toMatch(expected);
    } finally {
      client.disconnect();
      await redis.stop();
    }
  });
});

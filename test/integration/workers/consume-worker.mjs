// A separate Node process hammering one key per algorithm, all at once: argv = compiled lib dir,
// redis (JSON: a URL or `{ cluster: { nodes } }`), key prefix, key, algorithms (comma-separated),
// limit, windowMs, calls (per algorithm). Prints how many calls each algorithm granted, as
// { granted: { <algorithm>: n } }; each algorithm's key is `<key>:<algorithm>`.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';

const [libDir, redis, keyPrefix, key, algorithms, limit, windowMs, calls] = process.argv.slice(2);
const { RedisLimitModule, RateLimiterService } = await import(`${libDir}/index.js`);
// exactness is the point, not latency: the tests' generous deadline (TEST_COMMAND_TIMEOUT_MS), not
// the 500 ms default, which four processes of 250 calls each on a loaded machine may outrun
const options = { redis: JSON.parse(redis), keyPrefix, commandTimeoutMs: 5_000 };
const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot(options), {
  logger: false,
});
const limiter = app.get(RateLimiterService);
const granted = {};
await Promise.all(
  algorithms.split(',').map(async (algorithm) => {
    const policy = { algorithm, limit: Number(limit), windowMs: Number(windowMs) };
    const decisions = await Promise.all(Array.from({ length: Number(calls) }, () => limiter.consume(`${key}:${algorithm}`, policy)));
    granted[algorithm] = decisions.filter((d) => d.allowed).length;
  }),
);
process.stdout.write(JSON.stringify({ granted }));
await app.close();

// A separate Node process hammering one key: argv = compiled lib dir, redis (JSON: a URL or
// `{ cluster: { nodes } }`), key prefix,
// key, algorithm, limit, windowMs, calls. Prints how many calls were granted.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';

const [libDir, redis, keyPrefix, key, algorithm, limit, windowMs, calls] = process.argv.slice(2);
const { RedisLimitModule, RateLimiterService } = await import(`${libDir}/index.js`);
const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: JSON.parse(redis), keyPrefix }), {
  logger: false,
});
const limiter = app.get(RateLimiterService);
const policy = { algorithm, limit: Number(limit), windowMs: Number(windowMs) };
const decisions = await Promise.all(Array.from({ length: Number(calls) }, () => limiter.consume(key, policy)));
process.stdout.write(JSON.stringify({ granted: decisions.filter((d) => d.allowed).length }));
await app.close();

// A separate Node process that only sweeps, to be killed while it delivers expiry notifications:
// argv[2] is JSON { libDir, redis, keyPrefix, sweepIntervalMs }. It boots
// RedisLimitModule.forRoot({ redis, keyPrefix, expiringHash: { sweepIntervalMs } }), makes one
// ExpiringHashService call (which starts its sweeper), prints { event: 'ready' } and sweeps until
// it is killed.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';

const { libDir, redis, keyPrefix, sweepIntervalMs } = JSON.parse(process.argv[2]);
const { RedisLimitModule, ExpiringHashService } = await import(`${libDir}/index.js`);
const logger = { log() {}, debug() {}, verbose() {}, warn() {}, error() {}, fatal() {} };
const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis, keyPrefix, expiringHash: { sweepIntervalMs } }), { logger });
await app.get(ExpiringHashService).count('anyone');
process.stdout.write(`${JSON.stringify({ event: 'ready' })}\n`);
setInterval(() => undefined, 60_000); // keeps the process alive until the kill

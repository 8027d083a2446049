// A separate Node process writing expiring fields with expiry notifications, to be killed mid-burst:
// argv[2] is JSON { libDir, redis, keyPrefix, queue, owners, ownerPrefix, writes, ttlMs }. It boots
// RedisLimitModule.forRoot({ redis, keyPrefix, expiringHash: { sweepIntervalMs: 0 } }) (no sweeper:
// delivery is another process's job) and sends `writes` setIfBelow calls over `owners` owners, each
// with `{ notify: queue }`, as fast as they resolve (up to 20 in flight). Prints one line per call
// as it starts ({ event: 'try', field }) and as it resolves ({ event: 'ok', field, accepted }).
import { writeSync } from 'node:fs';
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';

const { libDir, redis, keyPrefix, queue, owners, ownerPrefix = '', writes, ttlMs } = JSON.parse(process.argv[2]);
const { RedisLimitModule, ExpiringHashService } = await import(`${libDir}/index.js`);
const logger = { log() {}, debug() {}, verbose() {}, warn() {}, error() {}, fatal() {} };
const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis, keyPrefix, expiringHash: { sweepIntervalMs: 0 } }), { logger });
const hash = app.get(ExpiringHashService);
// written straight to fd 1: a line process.stdout still held when the kill came would be lost,
// and the parent would take a write that was sent for one never tried
function say(line) {
  const bytes = Buffer.from(`${JSON.stringify(line)}\n`);
  for (let at = 0; at < bytes.length;) {
    try {
      at += writeSync(1, bytes, at);
    } catch (error) {
      if (error.code !== 'EAGAIN') throw error; // a full pipe that is not blocking: try again
    }
  }
}

let next = 0;
async function lane() {
  while (next < writes) {
    const n = next++;
    const owner = `${ownerPrefix}owner-${n % owners}`;
    const field = `slot-${n}`;
    say({ event: 'try', owner, field });
    const { accepted } = await hash.setIfBelow(owner, field, `v${n}`, ttlMs + (n % 7) * 50, 1_000, { notify: queue });
    say({ event: 'ok', owner, field, accepted });
  }
}
await Promise.all(Array.from({ length: 20 }, lane));
say({ event: 'done' });
await app.close();

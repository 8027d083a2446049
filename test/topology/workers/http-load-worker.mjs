// A separate Node process serving one rate-limited route and loading it: argv[2] is JSON
//   { libDir, redis, keyPrefix, failMode, limit, windowMs, inFlight }
// It boots a Nest HTTP app with RedisLimitModule.forRoot({ redis, keyPrefix, failMode }) and one
// route, GET /hot, under @RateLimit({ limit, windowMs, key: 'hot' for every request }), listens on
// a loopback port and keeps `inFlight` requests going to itself. Prints { event: 'ready', pid }
// once serving; on SIGTERM stops, prints { event: 'done', pid, samples } where each sample is
// [at (ms), status, limited (1 when the answer carries X-RateLimit-Limit, i.e. Redis decided)],
// and exits 0.
import 'reflect-metadata';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

const { libDir, redis, keyPrefix, failMode, limit, windowMs, inFlight } = JSON.parse(process.argv[2]);
const { RedisLimitModule, RateLimit } = await import(`${libDir}/index.js`);

// decorators by hand: this file is plain JavaScript
class HotController {
  hot() {
    return 'ok';
  }
}
const hot = Object.getOwnPropertyDescriptor(HotController.prototype, 'hot');
RateLimit({ limit, windowMs, algorithm: 'fixed-window', key: () => 'hot' })(HotController.prototype, 'hot', hot);
Get('hot')(HotController.prototype, 'hot', hot);
Controller()(HotController);

class LoadModule {}
Module({ imports: [RedisLimitModule.forRoot({ redis, keyPrefix, failMode })], controllers: [HotController] })(LoadModule);

const app = await NestFactory.create(LoadModule, { logger: ['error'] });
await app.listen(0, '127.0.0.1');
const url = `${await app.getUrl()}/hot`.replace('[::1]', '127.0.0.1');

const samples = [];
let running = true;
async function loop() {
  while (running) {
    let status = 0;
    let limited = 0;
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
      await response.arrayBuffer();
      status = response.status;
      limited = response.headers.has('x-ratelimit-limit') ? 1 : 0;
    } catch {
      status = -1; // no answer within 5 s
    }
    samples.push([Date.now(), status, limited]);
  }
}
const loops = Array.from({ length: inFlight }, loop);
process.stdout.write(`${JSON.stringify({ event: 'ready', pid: process.pid })}\n`);

process.once('SIGTERM', async () => {
  running = false;
  await Promise.all(loops);
  await app.close();
  process.stdout.write(`${JSON.stringify({ event: 'done', pid: process.pid, samples })}\n`, () => process.exit(0));
});

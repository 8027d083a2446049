// `node scripts/dashboard-screenshots.mjs`: the sample app on an embedded redis-server, seeded
// with traffic, dead messages and an override, photographed by headless Chromium into docs/:
// the whole page, the page 420 px wide, and the page once the redis-server is stopped.
// Needs Debian's chromium (or CHROMIUM_PATH). The chart's earlier minutes are recorded with
// past timestamps: an hour of traffic would take an hour.
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { NestFactory } from '@nestjs/core';
import puppeteer from 'puppeteer-core';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', 'sample-app/tsconfig.json'], { stdio: 'inherit' });
const { AppModule, setUpSampleApp } = await import('../dist-sample/sample-app/src/app.module.js');
const { RedisNode } = await import('../dist-sample/test/harness/redis-server.js');
const { DelayQueueService, RateLimiterService } = await import('../dist-sample/lib/index.js');
const { DecisionSeries } = await import('../dist-sample/lib/dashboard/decision-series.js');
const { UNPAID_ORDER_EXPIRED } = await import('../dist-sample/sample-app/src/orders/unpaid-orders.js');
const { DEMO_ADMIN_KEY } = await import('../dist-sample/sample-app/src/orders/admin-key.guard.js');

const redis = await RedisNode.start();
const app = setUpSampleApp(await NestFactory.create(AppModule.register({ redis: redis.url }), { logger: ['error'] }));
await app.listen(0, '127.0.0.1');
const base = `http://127.0.0.1:${app.getHttpServer().address().port}`;
const browser = await puppeteer.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  const queue = app.get(DelayQueueService);
  // lapse notices the canceller cannot parse: they die after two attempts
  await queue.enqueue(UNPAID_ORDER_EXPIRED, { key: 'unpaid-orders:alice', field: 'o-1041', value: '{not json' }, { id: 'o-1041' });
  await queue.enqueue(UNPAID_ORDER_EXPIRED, { key: 'unpaid-orders:bob', field: 'o-1042', value: '<script>alert("hi")</script>' }, { id: 'o-1042' });
  for (const phone of ['+15555550100', '+15555550101', '+15555550102']) {
    await queue.enqueue('sms-reminders', { phone, text: 'Your table is ready' }, { delayMs: 600_000 });
  }
  for (let i = 0; i < 8; i++) await fetch(`${base}/quotes/ACME`);
  for (let i = 0; i < 7; i++) {
    await fetch(`${base}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ account: 'bob', password: 'guess' }),
    });
  }
  await fetch(`${base}/quotes?symbols=ACME,GLOBEX`);
  // a user with more unpaid orders than @MaxPending allows: the last ones are refused
  for (let i = 0; i < 5; i++) {
    await fetch(`${base}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-user-id': 'carol' },
      body: JSON.stringify({ item: 'espresso' }),
    });
  }
  const series = app.get(DecisionSeries);
  const now = Date.now();
  for (let minute = 1; minute < 45; minute++) {
    const wave = Math.round(12 + 10 * Math.sin(minute / 6));
    for (let i = 0; i < wave; i++)
      series.record(
        { type: 'redis-limit.decision', allowed: i < wave - (minute % 9 === 0 ? 6 : 1), retryAfterMs: 0, limits: [], route: 'QuotesController.quote' },
        now - minute * 60_000,
      );
    for (let i = 0; i < minute % 4; i++)
      series.record({ type: 'redis-limit.decision', allowed: i > 1, retryAfterMs: 0, limits: [], route: 'LoginController.login' }, now - minute * 60_000);
  }
  await series.flush();
  // an incident: failed logins allowed 10 per window instead of 5, in every instance
  await app.get(RateLimiterService).setOverride('login', { limit: 10 });
  while ((await queue.size(UNPAID_ORDER_EXPIRED)).dead < 2) await sleep(50);

  const page = await browser.newPage();
  await page.authenticate({ username: 'admin', password: DEMO_ADMIN_KEY });
  await page.setViewport({ width: 1180, height: 900, deviceScaleFactor: 1 });
  await page.goto(`${base}/redis-limit`);
  await page.waitForSelector('body[data-loaded]');
  await page.click(`#queues tr[data-queue="${UNPAID_ORDER_EXPIRED}"] button`);
  await page.waitForSelector('#dead tr[data-id="o-1042"]');
  // an operator asks why an SMS waits, and how bob's failed logins stand
  await page.waitForSelector('#schedules tr[data-name="unpaid-summary"]');
  const [sms] = (await queue.list('sms-reminders', { state: 'scheduled', limit: 1 })).messages;
  await page.type('#find-queue', 'sms-reminders');
  await page.type('#find-id', sms.id);
  await page.click('#find-form button[type="submit"]');
  await page.waitForSelector('#find-payload:not([hidden])');
  await page.type('#explain-name', 'login');
  await page.type('#explain-key', 'bob');
  await page.click('#explain-limit-form button[type="submit"]');
  await page.waitForSelector('#explain-limit-sentences li');
  await shoot(page, 1180, 'docs/dashboard.png');
  await shoot(page, 420, 'docs/dashboard-narrow.png');

  await redis.stop();
  await page.setViewport({ width: 1180, height: 900, deviceScaleFactor: 1 });
  await page.click('#refresh');
  // the last section a redraw reads: every other one has learnt it by then
  await page.waitForSelector('#dead-section .unread:not([hidden])');
  await shoot(page, 1180, 'docs/dashboard-redis-down.png');
} finally {
  await browser.close();
  await app.close();
  await redis.stop();
}

/** The whole page at `width` in one frame (fullPage sometimes stops at the first screen's height). */
async function shoot(page, width, path) {
  await page.setViewport({ width, height: 900, deviceScaleFactor: 1 });
  // eslint-disable-next-line no-undef -- page.evaluate runs this in the page, where document is
  await page.setViewport({ width, height: await page.evaluate(() => document.documentElement.scrollHeight), deviceScaleFactor: 1 });
  await page.screenshot({ path });
  console.log(`wrote ${path}`);
}

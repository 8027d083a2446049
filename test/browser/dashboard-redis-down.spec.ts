import type { Browser, Page } from 'puppeteer-core';
import type { DashboardOverview } from '../../lib/dashboard/dashboard-overview.js';
import type { DecisionSeriesPage } from '../../lib/dashboard/decision-series.js';
import type { HttpPlatform } from '../harness/platform-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';
import { LAUNCH_TIMEOUT_MS, launchChromium } from './browser.js';
import { ADMIN_KEY, dashboardApp, JOBS, type DashboardApp } from './dashboard-app.js';
import { adminPage, dead, text, untilDead } from './operator.js';

// An operator opens the dashboard because Redis is down: the page still loads, says so, shows
// this instance's counters (kept in its memory), and marks each section it could not read; no
// endpoint answers 500. Each platform's test owns its redis-server, and stops it.

const WAIT_MS = 30_000;

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
}, LAUNCH_TIMEOUT_MS);
afterAll(() => browser?.close());

const shown = (page: Page, selector: string) => page.$eval(selector, (node) => !(node as unknown as { hidden: boolean }).hidden);

/** Each counter of "This instance since it started", by its label. */
const counters = (page: Page) =>
  page.$$eval('#counters dt', (dts) => Object.fromEntries(dts.map((dt) => [dt.textContent ?? '', dt.nextElementSibling?.textContent ?? ''])));

describe.each<HttpPlatform>(['express', 'fastify'])('the dashboard with Redis down, on %s', (platform) => {
  let redis: TestRedis;
  let target: DashboardApp;
  let page: Page;
  beforeAll(async () => {
    redis = await TestRedis.start({ own: true });
    target = await dashboardApp(platform, redis);
    await dead(target, 'dead-one');
    await untilDead(target, 1);
    page = await adminPage(browser);
  });
  afterAll(async () => {
    await page?.close();
    await target?.close();
    await redis?.stop();
  });

  const get = (path: string) => fetch(`${target.origin}/redis-limit/${path}`, { headers: { 'x-admin-key': ADMIN_KEY } });
  const post = (path: string, body: unknown) =>
    fetch(`${target.origin}/redis-limit/${path}`, {
      method: 'POST',
      headers: { 'x-admin-key': ADMIN_KEY, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('loads, says Redis is down, shows the counters and marks what it could not read', async () => {
    expect((await fetch(`${target.origin}/hello`)).status).toBe(200);
    await redis.stop();
    // failMode 'closed': the outage is counted here, in memory
    expect((await fetch(`${target.origin}/hello`)).status).toBe(503);

    const response = await page.goto(`${target.origin}/redis-limit`);
    expect(response?.status()).toBe(200);
    await page.waitForSelector('body[data-loaded]');
    expect(await text(page, '#redis-health')).toMatch(/^Redis down, standalone, /);
    expect(await page.$eval('#redis-health', (node) => node.className)).toBe('down');

    const counts = await counters(page);
    expect(counts['Decisions allowed']).toBe('1');
    expect(counts['Outages']).toBe('1');
    expect(counts['Redis down: 503 (closed)']).toBe('1');
    expect(counts['Redis up now']).toBe('no');

    for (const section of ['#queues-section', '#schedules-section', '#chart-section', '#limits-section']) {
      expect(await shown(page, `${section} .unread`)).toBe(true);
      expect(await text(page, `${section} .unread`)).toMatch(/^Could not read this from Redis: /);
    }
    // the limits this app declares are in its memory: listed, their overrides unknown
    expect(await text(page, '#limits tr[data-name="greetings"] td.override')).toBe('?');
    // "no queue" or "no decision" would be a claim the page cannot make
    expect(await shown(page, '#no-queues')).toBe(false);
    expect(await shown(page, '#no-decisions')).toBe(false);
    expect(await text(page, '#message')).toBe('');
  });

  it('answers no endpoint with a 500: reads answer what they could, the rest 503', async () => {
    const overview = await get('api/overview');
    expect(overview.status).toBe(200);
    const body = (await overview.json()) as DashboardOverview;
    expect(body.redis.up).toBe(false);
    expect(Object.keys(body.unread).sort()).toEqual(['overrides', 'queues']);
    const decisions = await get('api/decisions');
    expect(decisions.status).toBe(200);
    expect(((await decisions.json()) as DecisionSeriesPage).unread).toEqual(expect.any(String));
    const statuses = [
      (await get(`api/dead?queue=${JOBS}`)).status,
      (await post('api/dead/retry', { queue: JOBS })).status,
      (await post('api/dead/purge', { queue: JOBS, ids: ['dead-one'] })).status,
      (await post('api/overrides', { name: 'greetings', policy: { limit: 9 } })).status,
    ];
    expect(statuses).toEqual([503, 503, 503, 503]);
  });

  it('shows Redis back once it answers again, with nothing marked', async () => {
    await redis.resume();
    await until(
      async () => {
        await page.click('#refresh');
        return (await page.$eval('#redis-health', (node) => node.className)) === 'up';
      },
      WAIT_MS,
      async () => `health still says ${await text(page, '#redis-health')}`,
    );
    await until(
      async () =>
        (await page.$$('#queues-section .unread:not([hidden]), #chart-section .unread:not([hidden]), #limits-section .unread:not([hidden])')).length === 0,
      WAIT_MS,
      () => 'a section is still marked unread',
    );
    // this redis-server keeps nothing on disk: it came back empty, and the page can say so now
    expect(await shown(page, '#no-queues')).toBe(true);
  });
});

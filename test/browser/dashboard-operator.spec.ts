import { get } from 'node:http';
import type { Page } from 'puppeteer-core';
import { DecisionSeries } from '../../lib/dashboard/decision-series.js';
import type { HttpPlatform } from '../harness/platform-app.js';
import { until } from '../harness/until.js';
import { ADMIN_KEY, dashboardApp, JOBS, type DashboardApp } from './dashboard-app.js';
import { adminPage, click, dead, redisAndChromium, text, typeInto, untilDead, WAIT_MS } from './operator.js';

// What an operator meets in an incident, in a real headless Chromium on both HTTP platforms: the
// chart's refusals (@MaxPending's too, a quiet route's beside a busy one), actions that say how
// they went where they were taken, a purge that asks first, a narrow window, and the page's URL.

const started = redisAndChromium();

async function open(page: Page, url: string): Promise<void> {
  const response = await page.goto(url);
  expect(response?.status()).toBe(200);
  await page.waitForSelector('body[data-loaded]');
}

/** The text an action's result shows in `selector`, once it shows one wholly on screen. */
async function resultShown(page: Page, selector: string): Promise<string> {
  const onScreen = () =>
    page.$eval(selector, (node) => {
      const box = node.getBoundingClientRect();
      return node.textContent !== '' && box.top >= 0 && box.bottom <= (globalThis as unknown as { innerHeight: number }).innerHeight;
    });
  await until(onScreen, WAIT_MS, () => `no result on screen in ${selector}`);
  return text(page, selector);
}

/** Redraws the page now and waits until `check` holds. */
async function redrawUntil(page: Page, check: () => Promise<boolean>, what: () => Promise<string> | string): Promise<void> {
  await click(page, '#refresh');
  await until(check, WAIT_MS, what);
}

const post = (target: DashboardApp, path: string) => fetch(`${target.origin}${path}`, { method: 'POST' }).then((r) => r.status);

describe.each<HttpPlatform>(['express', 'fastify'])('the dashboard in an incident, on %s', (platform) => {
  let target: DashboardApp;
  let page: Page;
  beforeAll(async () => {
    target = await dashboardApp(platform, started.redis);
    page = await adminPage(started.browser);
    await open(page, `${target.origin}/redis-limit`);
  });
  afterAll(async () => {
    await page?.close();
    await target?.close();
  });

  const route = (name: string) => `#charts .route[data-route="HelloController.${name}"]`;

  it('charts @MaxPending refusals as refusals, in place of the grants the rate limits counted', async () => {
    const orders = [];
    for (let i = 0; i < 10; i++) orders.push(await post(target, '/hello/orders'));
    expect(orders).toEqual([...new Array(7).fill(201), 429, 429, 429]);
    const carts = [];
    for (let i = 0; i < 3; i++) carts.push(await post(target, '/hello/carts'));
    expect(carts).toEqual([201, 201, 429]);
    await target.flushDecisions();
    await redrawUntil(
      page,
      async () => (await page.$(`${route('cart')} .route-totals`)) !== null,
      () => 'no chart of HelloController.cart',
    );
    expect(await text(page, `${route('order')} .route-totals`)).toBe('7 / 3');
    // no rate limit decides a cart: only @MaxPending's refusal is a decision of the limiter
    expect(await text(page, `${route('cart')} .route-totals`)).toBe('0 / 1');
  });

  it("draws each route on its own scale: a quiet route's refusals stand tall beside a busy route, with tooltips", async () => {
    const series = target.app.get(DecisionSeries);
    const now = Date.now();
    const decision = (route: string, allowed: boolean) => series.record({ type: 'redis-limit.decision', allowed, retryAfterMs: 0, limits: [], route }, now);
    for (let i = 0; i < 400; i++) decision('HelloController.busy', true);
    for (let i = 0; i < 2; i++) decision('HelloController.login', false);
    await series.flush();
    await redrawUntil(
      page,
      async () => (await page.$(`${route('login')} rect.refused`)) !== null,
      () => 'no refusal drawn for HelloController.login',
    );
    // the viewBox is 40 high: the quiet route's 2 refusals are its whole scale
    const height = (selector: string) => page.$eval(selector, (rect) => Number(rect.getAttribute('height')));
    expect(await height(`${route('login')} rect.refused`)).toBeGreaterThan(30);
    expect(await height(`${route('busy')} rect.allowed`)).toBeGreaterThan(30);
    expect(await text(page, `${route('login')} .route-peak`)).toBe('scale: 2 / min');

    const minute = now - (now % 60_000);
    const tooltip = await text(page, `${route('login')} g[data-minute="${minute}"] > title`);
    const at = new Date(minute);
    const clock = `${String(at.getHours()).padStart(2, '0')}:${String(at.getMinutes()).padStart(2, '0')}`;
    expect(tooltip).toBe(`${clock}: 0 allowed, 2 refused`);
    expect(await text(page, `${route('busy')} g[data-minute="${minute}"] > title`)).toBe(`${clock}: 400 allowed, 0 refused`);
  });

  it('says how an action went beside its buttons, on screen, in words', async () => {
    await dead(target, 'to-retry');
    await untilDead(target, 1);
    await redrawUntil(
      page,
      async () => (await page.$(`#queues tr[data-queue="${JOBS}"] button`)) !== null,
      () => 'queue not listed',
    );
    await click(page, `#queues tr[data-queue="${JOBS}"] button`);
    await page.waitForSelector('#dead tr[data-id="to-retry"]');
    target.jobs.failing.delete('to-retry');
    await click(page, '#dead tr[data-id="to-retry"] button.retry');
    expect(await resultShown(page, '#dead-result')).toBe('Retried to-retry: 1 message back to scheduled.');

    await typeInto(page, '#limits tr[data-name="greetings"] input[aria-label="limit of greetings"]', '10');
    await click(page, '#limits tr[data-name="greetings"] button.set-override');
    expect(await resultShown(page, '#limits-result')).toBe('Override of greetings set to 10 / ?; every instance applies it.');
    expect(await text(page, '#message')).toBe('');
  });

  it('asks before purging every dead message of a queue, and purges nothing on Cancel', async () => {
    await dead(target, 'kept');
    await dead(target, 'also-kept');
    await untilDead(target, 2);
    await redrawUntil(
      page,
      async () => (await page.$$('#dead tr[data-id]')).length === 2,
      () => 'two dead messages not listed',
    );
    await click(page, '#purge-all');
    await page.waitForSelector('#purge-confirm:not([hidden])');
    expect(await text(page, '#purge-question')).toBe(`Delete all 2 dead messages of ${JOBS} with their payloads? This cannot be undone.`);
    await click(page, '#purge-all-cancel');
    await page.waitForSelector('#purge-confirm[hidden]');
    await redrawUntil(
      page,
      async () => (await page.$$('#dead tr[data-id]')).length === 2,
      () => 'a dead message went',
    );
    expect((await target.queue.size(JOBS)).dead).toBe(2);

    await click(page, '#purge-all');
    await click(page, '#purge-all-confirm');
    await untilDead(target, 0);
    await until(
      async () => (await text(page, '#dead-result')).startsWith('Purged all'),
      WAIT_MS,
      () => 'no result of the purge',
    );
    expect(await text(page, '#dead-result')).toBe(`Purged all of ${JOBS}: 2 messages deleted.`);
  });

  it('fits a 420 px wide window: nothing wider than the page, time labels apart', async () => {
    const narrow = await adminPage(started.browser);
    try {
      await narrow.setViewport({ width: 420, height: 900 });
      await open(narrow, `${target.origin}/redis-limit`);
      await narrow.waitForSelector('#charts .route svg');
      const layout = await narrow.evaluate(() => {
        const doc = (
          globalThis as unknown as {
            document: {
              documentElement: { scrollWidth: number; clientWidth: number };
              querySelectorAll: (s: string) => ArrayLike<{ getBoundingClientRect(): { left: number; right: number; width: number } }>;
            };
          }
        ).document;
        const labels = Array.from(doc.querySelectorAll('.time-axis span'), (span) => span.getBoundingClientRect());
        const chart = doc.querySelectorAll('#charts .route svg')[0]!.getBoundingClientRect();
        return {
          scrollWidth: doc.documentElement.scrollWidth,
          clientWidth: doc.documentElement.clientWidth,
          labels: labels.map((b) => ({ left: b.left, right: b.right })),
          chartWidth: chart.width,
        };
      });
      expect(layout.scrollWidth).toBeLessThanOrEqual(layout.clientWidth);
      for (let i = 1; i < layout.labels.length; i++) expect(layout.labels[i]!.left).toBeGreaterThanOrEqual(layout.labels[i - 1]!.right);
      // the chart keeps most of the width rather than a sliver beside the route's name
      expect(layout.chartWidth).toBeGreaterThan(300);
    } finally {
      await narrow.close();
    }
  });

  it('links its own icon, so a browser does not ask the app for /favicon.ico', async () => {
    // headless Chromium asks for no icon at all: what a browser would ask for is what the page links
    const icon = await page.$eval('link[rel="icon"]', (link) => link.getAttribute('href'));
    expect(icon).toBe('favicon.svg');
    const answer = await fetch(`${target.origin}/redis-limit/${icon}`, { headers: { 'x-admin-key': ADMIN_KEY } });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    expect(await answer.text()).toMatch(/^<svg /);
  });
});

describe('the page on Fastify with useSemicolonDelimiter', () => {
  let target: DashboardApp;
  beforeAll(async () => {
    target = await dashboardApp('fastify', started.redis, { fastify: { useSemicolonDelimiter: true } });
  });
  afterAll(() => target?.close());

  it('takes `$` patterns in the URL as text, and works from a URL with a ;', async () => {
    // fetch() would percent-encode the backtick: the attacker's script sends it as it is
    const { status, html } = await new Promise<{ status: number | undefined; html: string }>((resolve, reject) => {
      get(`${target.origin}/`, { path: '/redis-limit;$`x/', headers: { 'x-admin-key': ADMIN_KEY }, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode, html: body }));
      }).on('error', reject);
    });
    expect(status).toBe(200);
    expect(html.match(/<base [^>]*>/g)).toEqual(['<base href="/redis-limit/">']);
    expect(html.match(/<head>/g)).toHaveLength(1);

    const page = await adminPage(started.browser);
    try {
      await open(page, `${target.origin}/redis-limit;$'x`);
      expect(await text(page, '#redis-health')).toMatch(/^(redis|valkey) \d/);
    } finally {
      await page.close();
    }
  });
});

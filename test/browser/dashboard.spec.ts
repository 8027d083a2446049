import type { Browser, Page } from 'puppeteer-core';
import type { DecisionSeriesPage } from '../../lib/dashboard/decision-series.js';
import { RateLimiterService, RedisLimitDashboardModule } from '../../lib/index.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import type { HttpPlatform } from '../harness/platform-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';
import { LAUNCH_TIMEOUT_MS, launchChromium } from './browser.js';
import { ADMIN_KEY, dashboardApp, JOBS, type DashboardApp } from './dashboard-app.js';
import { click, typeInto, WAIT_MS } from './operator.js';

// The dashboard in a real headless Chromium, on both HTTP platforms: what it shows of a seeded
// app, and what its buttons do to the queue and the limits.

let redis: TestRedis;
let browser: Browser;
beforeAll(async () => {
  [redis, browser] = await Promise.all([TestRedis.start(), launchChromium()]);
}, LAUNCH_TIMEOUT_MS);
afterAll(async () => {
  await browser?.close();
  await redis?.stop();
});

const XSS = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">';

/** A message of JOBS that dies at its first attempt. */
async function dead(target: DashboardApp, id: string, payload: unknown): Promise<void> {
  target.jobs.failing.add(id);
  await target.queue.enqueue(JOBS, payload, { id });
}

/** A page that sends the admin key with every request, as an operator's proxy would. */
async function adminPage(): Promise<Page> {
  const page = await browser.newPage();
  await page.setExtraHTTPHeaders({ 'x-admin-key': ADMIN_KEY });
  return page;
}

/** Loads the page (or reloads it) and waits until it has drawn what the JSON said. */
async function open(page: Page, target: DashboardApp): Promise<void> {
  const response = await page.goto(`${target.origin}/redis-limit`);
  expect(response?.status()).toBe(200);
  await page.waitForSelector('body[data-loaded]');
}

const text = (page: Page, selector: string) => page.$eval(selector, (node) => node.textContent ?? '');

describe.each<HttpPlatform>(['express', 'fastify'])('the dashboard on %s', (platform) => {
  let target: DashboardApp;
  let page: Page;
  beforeAll(async () => {
    target = await dashboardApp(platform, redis);
    await dead(target, 'to-retry', { order: 41 });
    await dead(target, 'to-purge', { order: 42 });
    await dead(target, 'hostile', { html: XSS });
    await target.queue.enqueue(JOBS, { order: 43 }, { id: 'later', delayMs: 3_600_000 });
    await until(
      async () => (await target.queue.size(JOBS)).dead === 3,
      WAIT_MS,
      async () => JSON.stringify(await target.queue.size(JOBS)),
    );
    page = await adminPage();
    await open(page, target);
  });
  afterAll(async () => {
    await page?.close();
    await target?.close();
  });

  it('shows the queue with its scheduled, in-flight and dead counts, and Redis health', async () => {
    const cells = await page.$$eval(`#queues tr[data-queue="${JOBS}"] td`, (tds) => tds.map((td) => td.textContent));
    expect(cells.slice(0, 4)).toEqual([JOBS, '1', '0', '3']);
    expect(await text(page, '#redis-health')).toMatch(/^(redis|valkey) \d+\.\d+\.\d+, standalone, PING [\d.]+ ms$/);
  });

  it('lists dead messages with payload, attempts and error, and renders a payload holding <script> as text', async () => {
    await click(page, `#queues tr[data-queue="${JOBS}"] button`);
    await page.waitForSelector('#dead tr[data-id="hostile"]');
    const row = await page.$$eval('#dead tr[data-id="to-retry"] td', (tds) => tds.map((td) => td.textContent));
    expect(row.slice(0, 4)).toEqual(['to-retry', JSON.stringify({ order: 41 }, null, 1), '1', 'Error: job to-retry failed <b>on purpose</b>']);
    expect(await text(page, '#dead tr[data-id="hostile"] pre')).toContain('<script>window.__pwned = 1</script>');
    expect(await page.$$('#dead script, #dead img, #dead b')).toHaveLength(0);
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
  });

  it('retries a dead message (it then runs) and purges another', async () => {
    target.jobs.failing.delete('to-retry');
    await click(page, '#dead tr[data-id="to-retry"] button.retry');
    await until(
      () => target.jobs.ran.has('to-retry'),
      WAIT_MS,
      () => 'to-retry never ran',
    );
    // the page redraws after each action: wait for that before the next click
    await until(
      async () => (await page.$('#dead tr[data-id="to-retry"]')) === null,
      WAIT_MS,
      () => 'to-retry still listed',
    );
    await click(page, '#dead tr[data-id="to-purge"] button.purge');
    await until(
      async () => (await page.$('#dead tr[data-id="to-purge"]')) === null,
      WAIT_MS,
      () => 'to-purge still listed',
    );
    const left = (await target.queue.dead(JOBS)).messages.map((m) => m.id);
    expect(left).toEqual(['hostile']);
    await page.click('#refresh');
    await until(
      async () => (await text(page, `#queues tr[data-queue="${JOBS}"] td.dead-count`)) === '1',
      WAIT_MS,
      () => 'dead count not 1',
    );
  });

  it('charts decisions and refusals per route after traffic, and sets an override the next request obeys', async () => {
    const hello = () => fetch(`${target.origin}/hello`);
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await hello()).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    await target.flushDecisions();
    await page.click('#refresh');
    await page.waitForSelector('#charts .route[data-route="HelloController.hello"] rect.refused');
    expect(await text(page, '#charts .route[data-route="HelloController.hello"] .route-totals')).toBe('3 / 2');

    await typeInto(page, '#limits tr[data-name="greetings"] input[aria-label="limit of greetings"]', '10');
    await click(page, '#limits tr[data-name="greetings"] button.set-override');
    await until(
      async () => (await text(page, '#limits tr[data-name="greetings"] td.override')) === '10 / 60000 ms',
      WAIT_MS,
      () => 'override not shown',
    );
    const next = await hello();
    expect(next.status).toBe(200);
    expect(next.headers.get('x-ratelimit-limit')).toBe('10');

    await click(page, '#limits tr[data-name="greetings"] button.remove-override');
    await until(
      async () => (await text(page, '#limits tr[data-name="greetings"] td.override')) === '—',
      WAIT_MS,
      () => 'override not removed',
    );
    expect((await hello()).status).toBe(429);
  });

  it('lists recurring schedules with their timing, next run and runs, and removes one', async () => {
    const { nextRunAt } = await target.queue.schedule('reports', 'nightly', { cron: '30 2 * * *', tz: 'America/New_York' });
    await target.queue.schedule('reports', 'ping', { everyMs: 3_600_000, limit: 5 });
    await page.click('#refresh');
    const row = '#schedules tr[data-queue="reports"][data-name="nightly"]';
    await page.waitForSelector(row);
    const cells = await page.$$eval(`${row} td`, (tds) => tds.map((td) => td.textContent));
    expect(cells.slice(0, 3)).toEqual(['reports', 'nightly', 'cron 30 2 * * * (America/New_York)']);
    expect(cells[3]).toMatch(/^\d\d:\d\d, in [\d.]+ (s|min|h)$/);
    expect(cells[4]).toBe('0');
    expect(await page.$eval(`${row} td:nth-child(4)`, (td) => td.getAttribute('title'))).toBe(new Date(nextRunAt).toISOString());
    expect(await text(page, '#schedules tr[data-name="ping"] td:nth-child(3)')).toBe('every 3600000 ms, 5 runs at most');
    await click(page, `${row} button.unschedule`);
    await until(
      async () => (await page.$(row)) === null,
      WAIT_MS,
      () => 'still listed',
    );
    expect(await text(page, '#schedules-result')).toBe('Removed nightly of reports, with its pending tick.');
    expect((await target.queue.schedules('reports')).map((s) => s.name)).toEqual(['ping']);
  });

  it('finds a message by queue and id: where it is and why, and its payload; an unknown id says so', async () => {
    await typeInto(page, '#find-queue', JOBS);
    await typeInto(page, '#find-id', 'later');
    await page.click('#find-form button[type="submit"]');
    await until(
      async () => (await text(page, '#find-explain')).startsWith('due in '),
      WAIT_MS,
      () => text(page, '#find-explain'),
    );
    expect(await text(page, '#find-facts')).toMatch(/^scheduled, runAt \d{4}-\d\d-\d\dT[\d:.]+Z, 0 attempts$/);
    expect(JSON.parse(await text(page, '#find-payload'))).toEqual({ order: 43 });
    // the hostile payload of a dead message stays text
    await typeInto(page, '#find-id', 'hostile');
    await page.click('#find-form button[type="submit"]');
    await until(
      async () => (await text(page, '#find-explain')).startsWith('dead: '),
      WAIT_MS,
      () => text(page, '#find-explain'),
    );
    expect(JSON.parse(await text(page, '#find-payload'))).toEqual({ html: XSS });
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    await typeInto(page, '#find-id', 'nope');
    await page.click('#find-form button[type="submit"]');
    await until(
      async () => (await text(page, '#find-explain')).startsWith('unknown: '),
      WAIT_MS,
      () => text(page, '#find-explain'),
    );
    expect(await page.$eval('#find-payload', (node) => (node as unknown as { hidden: boolean }).hidden)).toBe(true);
  });

  it('explains a limit for a key, a sentence per counter, as RateLimiterService.explain does', async () => {
    await typeInto(page, '#explain-name', 'greetings');
    await typeInto(page, '#explain-key', 'nobody');
    await page.click('#explain-limit-form button[type="submit"]');
    await page.waitForSelector('#explain-limit-sentences li');
    const shown = await page.$$eval('#explain-limit-sentences li', (items) => items.map((li) => li.textContent));
    expect(shown).toEqual(await target.app.get(RateLimiterService).explain('greetings', 'nobody'));
    expect(shown[0]).toMatch(/0 of 3 used/);
  });

  it('sets a per-key override with a ttl, lists it under its name, and removes it alone', async () => {
    const row = '#limits tr[data-name="greetings"]';
    const keyed = `${row} .keyed-override[data-key="tenant-x"]`;
    await typeInto(page, `${row} input[aria-label="limit of greetings"]`, '4');
    await typeInto(page, `${row} input[aria-label="key of greetings"]`, 'tenant-x');
    await typeInto(page, `${row} input[aria-label="ttl of greetings"]`, '600000');
    await click(page, `${row} button.set-override`);
    await until(
      async () => (await page.$(keyed)) !== null,
      WAIT_MS,
      () => 'per-key override not shown',
    );
    expect(await text(page, keyed)).toMatch(/^tenant-x: 4 \/ 60000 ms until \d\d:\d\d Remove$/);
    // the name itself has none
    expect(await page.$eval(`${row} td.override`, (node) => node.firstChild?.textContent)).toBe('—');
    await click(page, `${keyed} button.remove-keyed-override`);
    await until(
      async () => (await page.$(keyed)) === null,
      WAIT_MS,
      () => 'per-key override not removed',
    );
  });

  it("shows this instance's concurrency slots and queue outcomes among its counters", async () => {
    const limiter = target.app.get(RateLimiterService);
    const slot = await limiter.acquireSlot('dashboard-slot', { limit: 1 });
    expect(await limiter.acquireSlot('dashboard-slot', { limit: 1 })).toBeNull();
    await slot!.release();
    const counters = () =>
      page.$$eval('#counters dt', (dts) => Object.fromEntries(dts.map((dt) => [dt.textContent ?? '', dt.nextElementSibling?.textContent ?? ''])));
    const expected = {
      'Concurrency slots taken': '1',
      'Concurrency slots refused (all held)': '1',
      'Queue handlers: RetryLater': '0',
      'Queue handlers: Unrecoverable (dead at once)': '0',
      'Queue messages: waited for a concurrency slot': '0',
    };
    await page.click('#refresh');
    // every figure in one reading: quiet run 24 read the refused count, then, on the next reading,
    // empty values beside the names (once in many runs; not reproduced since)
    await until(
      async () => {
        const shown = await counters();
        return Object.entries(expected).every(([name, value]) => shown[name] === value);
      },
      WAIT_MS,
      async () => `counters: ${JSON.stringify(await counters())}`,
    );
  });

  // An operator who has clicked into an override's field and not typed yet: a refresh that
  // redrew the table took the field away (under load the next keys went nowhere, and Set sent 0)
  it('keeps the override field an operator is in through a refresh', async () => {
    const selector = '#limits tr[data-name="greetings"] input[aria-label="limit of greetings"]';
    const field = (await page.waitForSelector(selector))!;
    await field.focus();
    await page.evaluate(() => (globalThis as unknown as { refresh(): Promise<void> }).refresh());
    expect(
      await field.evaluate(
        (input) => input.isConnected && input === (globalThis as unknown as { document: { activeElement: unknown } }).document.activeElement,
      ),
    ).toBe(true);
    await field.evaluate((input) => (input as unknown as { blur(): void }).blur());
  });

  it('refuses every request canActivate refuses: the page, its files and its JSON', async () => {
    const stranger = await browser.newPage();
    try {
      expect((await stranger.goto(`${target.origin}/redis-limit`))?.status()).toBe(403);
    } finally {
      await stranger.close();
    }
    for (const path of ['dashboard.js', 'api/overview', 'api/decisions', `api/dead?queue=${JOBS}`]) {
      expect((await fetch(`${target.origin}/redis-limit/${path}`)).status).toBe(403);
    }
  });

  it('takes actions from its own page only: another origin, another site or a form body is refused', async () => {
    const retry = (headers: Record<string, string>) =>
      fetch(`${target.origin}/redis-limit/api/dead/retry`, {
        method: 'POST',
        headers: { 'x-admin-key': ADMIN_KEY, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ queue: JOBS }),
      });
    expect((await retry({ origin: 'http://evil.example' })).status).toBe(403);
    expect((await retry({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await retry({ 'content-type': 'text/plain' })).status).toBe(415);
    expect((await target.queue.size(JOBS)).dead).toBe(1);
  });
});

describe('a read-only dashboard', () => {
  let target: DashboardApp;
  beforeAll(async () => {
    target = await dashboardApp('express', redis, { readOnly: true });
    await dead(target, 'stays', { order: 1 });
    await target.queue.schedule('reports', 'nightly', { everyMs: 3_600_000 });
    await until(
      async () => (await target.queue.size(JOBS)).dead === 1,
      WAIT_MS,
      () => 'not dead',
    );
  });
  afterAll(() => target?.close());

  it('shows no buttons that act and refuses every action with 403', async () => {
    const page = await adminPage();
    try {
      await open(page, target);
      await click(page, `#queues tr[data-queue="${JOBS}"] button`);
      await page.waitForSelector('#dead tr[data-id="stays"]');
      await page.waitForSelector('#schedules tr[data-name="nightly"]');
      expect(await page.$$('#dead button, #limits button, #limits input, #schedules button')).toHaveLength(0);
      expect(await page.$eval('#dead-actions', (node) => (node as unknown as { hidden: boolean }).hidden)).toBe(true);
      const answers = await page.evaluate(async (queue) => {
        const post = (path: string, body: unknown) =>
          fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.status);
        return [
          await post('api/dead/retry', { queue }),
          await post('api/dead/purge', { queue }),
          await post('api/overrides', { name: 'greetings', policy: { limit: 9 } }),
          await post('api/schedules/remove', { queue: 'reports', name: 'nightly' }),
        ];
      }, JOBS);
      expect(answers).toEqual([403, 403, 403, 403]);
      expect((await target.queue.size(JOBS)).dead).toBe(1);
      expect(await target.queue.schedules('reports')).toHaveLength(1);
    } finally {
      await page.close();
    }
  });
});

describe('the chart of two instances', () => {
  it('adds both to one picture, and an instance writes its last counts as it closes', async () => {
    const keyPrefix = uniquePrefix('dash-two');
    const [one, two] = await Promise.all([dashboardApp('express', redis, { keyPrefix }), dashboardApp('fastify', redis, { keyPrefix })]);
    try {
      for (let i = 0; i < 2; i++) await fetch(`${two.origin}/hello`);
      await two.close();
      await fetch(`${one.origin}/hello`);
      await one.flushDecisions();
      const answer = await fetch(`${one.origin}/redis-limit/api/decisions`, { headers: { 'x-admin-key': ADMIN_KEY } });
      const { routes } = (await answer.json()) as DecisionSeriesPage;
      const hello = routes.find((r) => r.route === 'HelloController.hello')!;
      expect(hello.allowed.reduce((a, b) => a + b, 0)).toBe(3);
    } finally {
      await one.close();
    }
  });
});

describe('RedisLimitDashboardModule.register', () => {
  it('throws a TypeError naming canActivate when it is missing', () => {
    expect(() => RedisLimitDashboardModule.register({} as never)).toThrow(/^RedisLimitDashboardModule\.register: canActivate must be a function/);
    expect(() => RedisLimitDashboardModule.register({ canActivate: () => true, path: '/:id' })).toThrow(TypeError);
  });
});

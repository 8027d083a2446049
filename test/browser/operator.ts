import type { Browser, Page } from 'puppeteer-core';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';
import { LAUNCH_TIMEOUT_MS, launchChromium } from './browser.js';
import { ADMIN_KEY, JOBS, type DashboardApp } from './dashboard-app.js';

// What the operator specs do to the page, and wait for. Waits are long: the machine may be busy.

export const WAIT_MS = 20_000;

/** A redis-server and a Chromium for the test file: started before its tests, stopped after. */
export function redisAndChromium(): { redis: TestRedis; browser: Browser } {
  const started = {} as { redis: TestRedis; browser: Browser };
  beforeAll(async () => {
    [started.redis, started.browser] = await Promise.all([TestRedis.start(), launchChromium()]);
  }, LAUNCH_TIMEOUT_MS);
  afterAll(async () => {
    await started.browser?.close();
    await started.redis?.stop();
  });
  return started;
}

/** A page that sends the admin key with every request, as an operator's proxy would. */
export async function adminPage(browser: Browser): Promise<Page> {
  const page = await browser.newPage();
  await page.setExtraHTTPHeaders({ 'x-admin-key': ADMIN_KEY });
  return page;
}

export const text = (page: Page, selector: string) => page.$eval(selector, (node) => node.textContent ?? '');

/** Clicks `selector`, again if the page redrew it between finding and clicking it (it redraws every 5 s). */
export async function click(page: Page, selector: string): Promise<void> {
  await until(
    () =>
      page.click(selector).then(
        () => true,
        (error: Error) => (/detached|not clickable|No element found/.test(error.message) ? false : Promise.reject(error)),
      ),
    WAIT_MS,
    () => `could not click ${selector}`,
  );
}

/**
 * Types `text` into the field `selector`, again if the page redrew it between finding and typing
 * (the keys then went to a field no longer on the page): until the field on the page holds it.
 */
export async function typeInto(page: Page, selector: string, text: string): Promise<void> {
  await until(
    async () => {
      const field = await page.$(selector);
      if (field === null) return false;
      await field.evaluate((input) => ((input as unknown as { value: string }).value = ''));
      await field.type(text);
      return page.$eval(selector, (input, typed) => (input as unknown as { value: string }).value === typed, text).catch(() => false);
    },
    WAIT_MS,
    () => `could not type into ${selector}`,
  );
}

/** A message of JOBS that dies at its first attempt. */
export async function dead(target: DashboardApp, id: string): Promise<void> {
  target.jobs.failing.add(id);
  await target.queue.enqueue(JOBS, { id }, { id });
}

/** Waits until JOBS holds `count` dead messages. */
export function untilDead(target: DashboardApp, count: number): Promise<void> {
  return until(
    async () => (await target.queue.size(JOBS)).dead === count,
    WAIT_MS,
    async () => `not ${count} dead: ${JSON.stringify(await target.queue.size(JOBS))}`,
  );
}

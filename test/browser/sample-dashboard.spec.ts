import { DEMO_ADMIN_KEY } from '../../sample-app/src/orders/admin-key.guard.js';
import { bootSample, type SampleApp } from '../e2e/sample-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { LAUNCH_TIMEOUT_MS, launchChromium } from './browser.js';

// The sample app mounts the dashboard at /redis-limit behind its admin key: a browser is asked
// for it (HTTP Basic, the key as password), a script sends x-admin-key.

describe('the sample app dashboard', () => {
  let redis: TestRedis;
  let sample: SampleApp;
  let origin: string;
  beforeAll(async () => {
    redis = await TestRedis.start();
    sample = await bootSample('express', { redis: redis.connection });
    origin = `http://127.0.0.1:${await sample.listen()}`;
  });
  afterAll(async () => {
    await sample?.close();
    await redis?.stop();
  });

  it(
    'asks a browser for the admin key, and shows the page once given it',
    async () => {
      const refused = await sample.http.get('/redis-limit');
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toMatch(/^Basic /);
      expect((await sample.http.get('/redis-limit/api/overview').set('x-admin-key', 'guess')).status).toBe(401);

      const browser = await launchChromium();
      try {
        const page = await browser.newPage();
        await page.authenticate({ username: 'admin', password: DEMO_ADMIN_KEY });
        expect((await page.goto(`${origin}/redis-limit`))?.status()).toBe(200);
        await page.waitForSelector('body[data-loaded]');
        // the sample's named limits, with their declarations, and buttons: the sample's dashboard acts
        expect(await page.$eval('#limits tr[data-name="login"] td', (td) => td.textContent)).toBe('login');
        expect(await page.$$('#limits tr[data-name="login"] button.set-override')).toHaveLength(1);
      } finally {
        await browser.close();
      }
    },
    LAUNCH_TIMEOUT_MS,
  );
});

import { PLATFORMS, withSampleApp } from './sample-app.js';

// POST /sms: @Funnel({ capacity: 1, leakingDurationMs: 30 min }) keyed by the phone in the body.
const HALF_HOUR_MS = 30 * 60_000;

describe.each(PLATFORMS)('one SMS per phone per 30 minutes on %s', (platform) => {
  const ctx = withSampleApp(platform);

  const sms = (body: object) => ctx.sample.http.post('/sms').send(body);

  it('sends the first SMS, refuses a second to the same phone for ~30 min, and leaves other phones alone', async () => {
    const first = await sms({ phone: '+15555550100', text: 'Your code is 123456' });
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ phone: '+15555550100', status: 'queued', id: expect.any(String) });
    expect(first.headers['x-ratelimit-limit']).toBe('1');
    expect(first.headers['x-ratelimit-remaining']).toBe('0');
    expect(first.headers['x-ratelimit-reset']).toBe('1800');

    const second = await sms({ phone: '+15555550100', text: 'Your code is 654321' });
    expect(second.status).toBe(429);
    expect(second.body).toEqual({ statusCode: 429, message: expect.any(String), retryAfterMs: expect.any(Number) });
    // the funnel refills over 30 min: a few ms have leaked since the first SMS, not more
    expect(second.body.retryAfterMs).toBeLessThanOrEqual(HALF_HOUR_MS);
    expect(second.body.retryAfterMs).toBeGreaterThan(HALF_HOUR_MS - 10_000);
    expect(second.headers['retry-after']).toBe('1800');

    const other = await sms({ phone: '+15555550199', text: 'Your code is 111111' });
    expect(other.status).toBe(202);
  });

  it.each([
    ['no phone', { text: 'hello' }],
    ['a phone that is not E.164', { phone: '555-0100', text: 'hello' }],
    ['a phone that is not a string', { phone: 15555550100, text: 'hello' }],
    ['no text', { phone: '+15555550100' }],
  ])('answers 400 for %s, charging no funnel', async (_, body) => {
    const bad = await sms(body);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ statusCode: 400, message: expect.any(String) });
    expect(bad.headers['x-ratelimit-limit']).toBeUndefined();
    expect((await sms({ phone: '+15555550100', text: 'hello' })).status).toBe(202);
  });
});

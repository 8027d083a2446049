import { RateLimiterService } from '../../lib/index.js';
import { COMPLETIONS_AT_ONCE } from '../../sample-app/src/completions/completions.controller.js';
import { TOKEN_BUDGET } from '../../sample-app/src/completions/completions.service.js';
import { PLATFORMS, withSampleApp } from './sample-app.js';

// POST /completions: a token budget of 10 000 per hour per API key, by reservation: maxTokens
// is reserved (consume), the part the answer did not use is given back (refund).
describe.each(PLATFORMS)('a token budget on %s', (platform) => {
  const ctx = withSampleApp(platform);
  const complete = (apiKey: string, body: object) => ctx.sample.http.post('/completions').set('x-api-key', apiKey).send(body);
  const left = async (apiKey: string) => (await ctx.sample.app.get(RateLimiterService).peek(`tokens:${apiKey}`, TOKEN_BUDGET)).remaining;

  it('charges the tokens used, not the tokens reserved', async () => {
    const answer = await complete('demo', { prompt: 'one two three', maxTokens: 1_000 });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ text: 'three two one', tokensUsed: 3, tokensLeft: 9_997 });
    expect(await left('demo')).toBe(9_997);
  });

  it('gives back what each answer did not use, so reservations do not pile up', async () => {
    // 19 reservations of 1 000 (19 000 against a budget of 10 000), each settling to 1 token
    for (let i = 0; i < 19; i++) expect((await complete('demo', { prompt: 'hi', maxTokens: 1_000 })).body.tokensLeft).toBe(10_000 - (i + 1));
    expect(await left('demo')).toBe(9_981);
  });

  it('refuses a reservation that does not fit, even one the answer would have fitted', async () => {
    const words = (n: number) => Array.from({ length: n }, () => 'w').join(' ');
    for (let i = 0; i < 9; i++) expect((await complete('big', { prompt: words(1_000), maxTokens: 1_000 })).body.tokensUsed).toBe(1_000);
    expect((await complete('big', { prompt: words(500), maxTokens: 500 })).body.tokensLeft).toBe(500);
    const refused = await complete('big', { prompt: 'hi', maxTokens: 1_000 });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ statusCode: 429, message: expect.any(String), retryAfterMs: expect.any(Number) });
    expect((await complete('big', { prompt: 'hi', maxTokens: 500 })).body).toMatchObject({ tokensUsed: 1, tokensLeft: 499 });
  });

  it('answers 400 for a bad body and 401 without an API key, reserving nothing', async () => {
    expect((await complete('demo', { prompt: 'hi', maxTokens: 0 })).status).toBe(400);
    expect((await ctx.sample.http.post('/completions').send({ prompt: 'hi', maxTokens: 5 })).status).toBe(401);
    expect(await left('demo')).toBe(10_000);
  });

  it('runs at most 2 completions per API key at once, across instances: another waits with a 429, reserving nothing', async () => {
    // two completions running for 'busy' elsewhere: the slots are the decorator's (its name)
    const limiter = ctx.sample.app.get(RateLimiterService);
    const slot = () => limiter.acquireSlot('busy', { limit: COMPLETIONS_AT_ONCE, name: 'completions' });
    const running = [await slot(), await slot()];
    try {
      const refused = await complete('busy', { prompt: 'hi', maxTokens: 5 });
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toMatch(/^\d+$/);
      expect(refused.body).toMatchObject({ statusCode: 429, retryAfterMs: expect.any(Number) });
      // another key is not held up
      expect((await complete('free', { prompt: 'hi', maxTokens: 5 })).status).toBe(200);
      await running[0]!.release();
      expect((await complete('busy', { prompt: 'hi', maxTokens: 5 })).status).toBe(200);
    } finally {
      for (const held of running) await held?.release();
    }
    expect(await left('busy')).toBe(9_999);
  });
});

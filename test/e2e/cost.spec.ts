import { PLATFORMS, withSampleApp } from './sample-app.js';

// GET /quotes?symbols=…: 20 permits per minute per IP, one per distinct symbol.
describe.each(PLATFORMS)('cost on %s', (platform) => {
  const ctx = withSampleApp(platform);

  const symbols = (n: number) => Array.from({ length: n }, (_, i) => `S${i}`).join(',');
  const bulk = (n: number) => ctx.sample.http.get(`/quotes?symbols=${symbols(n)}`);
  const remaining = (r: { headers: Record<string, string> }) => r.headers['x-ratelimit-remaining'];

  it('charges one permit per symbol, and nothing for a request that does not fit', async () => {
    const first = await bulk(8);
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(8);
    expect(remaining(first)).toBe('12');
    expect(remaining(await bulk(8))).toBe('4');

    const tooMany = await bulk(5);
    expect(tooMany.status).toBe(429);
    expect(remaining(tooMany)).toBe('4');
    expect(tooMany.body.retryAfterMs).toBeGreaterThan(50_000);

    const exact = await bulk(4);
    expect(exact.status).toBe(200);
    expect(remaining(exact)).toBe('0');
  });

  it('counts distinct symbols only', async () => {
    expect(remaining(await ctx.sample.http.get('/quotes?symbols=ACME,acme,ACME'))).toBe('19');
  });

  it('answers 400 for a request whose cost cannot be known, charging nothing', async () => {
    expect((await ctx.sample.http.get('/quotes')).status).toBe(400);
    expect((await bulk(11)).status).toBe(400); // more than 10 symbols per request
    expect((await ctx.sample.http.get('/quotes?symbols=ACME,not%20a%20symbol')).status).toBe(400);
    expect(remaining(await bulk(1))).toBe('19');
  });
});

import WebSocket from 'ws';
import { RedisLimitEvents, type LimitVerdict, type RedisLimitEvent } from '../../lib/index.js';
import { PLATFORMS, withSampleApp } from './sample-app.js';

// The sample app's WebSocket gateway at /ws (the `ws` adapter), on each HTTP platform, reached by
// a real `ws` client on an ephemeral port.
interface Reply {
  event: string;
  data: unknown;
}

/** One connected client; `send` resolves with the reply to that message before the next is sent. */
async function connect(port: number) {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/ws`);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const arrived: Reply[] = [];
  const waiting: ((reply: Reply) => void)[] = [];
  // one Buffer a message: the client keeps ws' default binaryType, 'nodebuffer'
  socket.on('message', (raw: Buffer) => {
    const reply = JSON.parse(raw.toString()) as Reply;
    const next = waiting.shift();
    if (next) next(reply);
    else arrived.push(reply);
  });
  const nextReply = () => {
    const reply = arrived.shift();
    return reply ? Promise.resolve(reply) : new Promise<Reply>((resolve) => waiting.push(resolve));
  };
  return {
    async send(event: string, data: unknown): Promise<Reply> {
      const reply = nextReply();
      socket.send(JSON.stringify({ event, data }));
      return reply;
    },
    async sendAll(count: number, event: string, data: unknown): Promise<Reply[]> {
      const replies: Reply[] = [];
      for (let i = 0; i < count; i++) replies.push(await this.send(event, data));
      return replies;
    },
    close: () => socket.close(),
  };
}

const refusal = { event: 'exception', data: { statusCode: 429, message: 'Too Many Requests', retryAfterMs: expect.any(Number) } };

describe.each(PLATFORMS)('the sample app over WebSocket on %s', (platform) => {
  const ctx = withSampleApp(platform);
  const clients: { close(): void }[] = [];
  const open = async () => {
    const client = await connect(await ctx.sample.listen());
    clients.push(client);
    return client;
  };
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });

  it("answers 5 'quote' messages, then the exception event with 429 and retryAfterMs", async () => {
    const client = await open();
    const replies = await client.sendAll(6, 'quote', { symbol: 'ACME' });
    expect(replies.slice(0, 5).map((r) => [r.event, (r.data as { symbol?: string }).symbol])).toEqual(Array(5).fill(['quote', 'ACME']));
    expect(replies[5]).toEqual(refusal);
    const retryAfterMs = (replies[5]!.data as { retryAfterMs: number }).retryAfterMs;
    expect(retryAfterMs).toBeGreaterThan(0);
    expect(retryAfterMs).toBeLessThanOrEqual(10_000);
  });

  it("decides 'quote' under its own limit and the app-wide default together", async () => {
    const limits: LimitVerdict[][] = [];
    ctx.sample.app.get(RedisLimitEvents).on((event: RedisLimitEvent) => {
      if (event.type === 'redis-limit.decision') limits.push(event.limits);
    });
    const client = await open();
    expect((await client.send('quote', { symbol: 'ACME' })).event).toBe('quote');
    expect(limits.map((stack) => stack.map(({ limit, remaining }) => ({ limit, remaining })).sort((a, b) => a.limit - b.limit))).toEqual([
      [
        { limit: 5, remaining: 4 },
        { limit: 100, remaining: 99 },
      ],
    ]);
  });

  it('counts a second socket from the same address on the same counter', async () => {
    const first = await open();
    expect((await first.sendAll(5, 'quote', { symbol: 'ACME' })).map((r) => r.event)).toEqual(Array(5).fill('quote'));
    const second = await open();
    expect(await second.send('quote', { symbol: 'GLOBEX' })).toEqual(refusal);
  });

  it('answers a bad symbol with an exception event that is no refusal', async () => {
    const client = await open();
    const reply = await client.send('quote', { symbol: 'no way' });
    expect(reply.event).toBe('exception');
    expect(reply.data).toMatchObject({ status: 'error', message: expect.stringContaining('not a ticker symbol') });
  });
});

import 'reflect-metadata';
import { MessageBody, SubscribeMessage, WebSocketGateway, WsException } from '@nestjs/websockets';
import { RateLimit, RateLimiterService } from '../../lib/index.js';
import { ADAPTERS, gatewayApp, type GatewayApp } from '../harness/gateway-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

// countIf on a WebSocket gateway, where no status is sent: the handler's end is the outcome
// (200 when it answered, a WsException's statusCode when it threw one).
const GUESS = { limit: 3, windowMs: 60_000 };

@WebSocketGateway()
class GuessGateway {
  @SubscribeMessage('guess')
  @RateLimit({ name: 'guess', ...GUESS, key: () => 'player', countIf: (_, outcome) => outcome.statusCode !== 200 })
  guess(@MessageBody() body: { n?: number }) {
    if (body.n !== 7) throw new WsException({ statusCode: 400, message: 'wrong' });
    return { event: 'ok', data: 'right' };
  }
}

describe.each(ADAPTERS)('countIf on a %s gateway', (adapter) => {
  let redis: TestRedis;
  let app: GatewayApp;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());
  beforeEach(async () => {
    app = await gatewayApp(adapter, redis.connection, {}, [GuessGateway]);
  });
  afterEach(() => app.close());

  const remaining = async () =>
    (await app.app.get(RateLimiterService).decide([{ key: 'player', scope: 'guess', policy: GUESS }], { peek: true })).decisions[0]!.remaining;
  const settled = (expected: number) =>
    until(
      async () => (await remaining()) === expected,
      20_000,
      async () => `${await remaining()} left, not ${expected}`,
    );

  it('gives back answered messages and counts the ones that threw', async () => {
    const client = await app.connect();
    for (let i = 0; i < 3; i++) {
      expect(await client.send('guess', { n: 7 })).toEqual({ event: 'ok', data: 'right' });
      await settled(3);
    }
    for (let i = 0; i < 3; i++) expect(await client.send('guess', { n: 1 })).toMatchObject({ event: 'exception', data: { statusCode: 400 } });
    await settled(0);
    expect(await client.send('guess', { n: 7 })).toMatchObject({ event: 'exception', data: { statusCode: 429 } });
  });
});

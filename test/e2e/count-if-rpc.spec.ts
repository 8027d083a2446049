import 'reflect-metadata';
import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { ClientProxyFactory, MessagePattern, RpcException, Transport, type ClientProxy, type MicroserviceOptions } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { RateLimit, RateLimiterService, RedisLimitModule } from '../../lib/index.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from '../harness/limiter-app.js';
import { freePort, TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

// countIf on a microservice handler (TCP): the handler's end is the outcome; an RpcException's
// error object gives its statusCode.
const CHARGE = { limit: 2, windowMs: 60_000 };

@Controller()
class PaymentsController {
  @MessagePattern('charge')
  @RateLimit({ name: 'declines', ...CHARGE, key: () => 'card', countIf: (_, outcome) => outcome.statusCode === 402 })
  charge(data: { amount: number }) {
    if (data.amount > 100) throw new RpcException({ statusCode: 402, message: 'declined' });
    return { charged: data.amount };
  }
}

describe('countIf on a microservice handler', () => {
  let redis: TestRedis;
  let app: INestMicroservice;
  let client: ClientProxy;
  beforeAll(async () => {
    redis = await TestRedis.start();
    const options = { host: '127.0.0.1', port: await freePort() };
    @Module({
      imports: [RedisLimitModule.forRoot({ redis: redis.connection, keyPrefix: uniquePrefix('rpc-outcome'), commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS })],
      controllers: [PaymentsController],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestMicroservice<MicroserviceOptions>({ transport: Transport.TCP, options, logger: false });
    await app.listen();
    client = ClientProxyFactory.create({ transport: Transport.TCP, options });
    await client.connect();
  });
  afterAll(async () => {
    await client?.close();
    await app?.close();
    await redis.stop();
  });

  const charge = (amount: number) => firstValueFrom(client.send<unknown>('charge', { amount })).catch((error: unknown) => ({ error }));
  const left = async () =>
    (await app.get(RateLimiterService).decide([{ key: 'card', scope: 'declines', policy: CHARGE }], { peek: true })).decisions[0]!.remaining;

  it('gives back the answered charges and counts the declines', async () => {
    for (let i = 0; i < 3; i++) {
      expect(await charge(10)).toEqual({ charged: 10 });
      await until(
        async () => (await left()) === 2,
        20_000,
        async () => `${await left()} left`,
      );
    }
    expect(await charge(500)).toEqual({ error: { statusCode: 402, message: 'declined' } });
    expect(await charge(500)).toEqual({ error: { statusCode: 402, message: 'declined' } });
    expect(await left()).toBe(0);
    expect(await charge(10)).toEqual({ error: { statusCode: 429, message: 'Too Many Requests', retryAfterMs: expect.any(Number) } });
  });
});

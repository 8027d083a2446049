import 'reflect-metadata';
import { Controller, type INestMicroservice } from '@nestjs/common';
import { MessagePattern, RpcException, type ClientProxy } from '@nestjs/microservices';
import { firstValueFrom } from 'rxjs';
import { RateLimit, RateLimiterService } from '../../lib/index.js';
import { microserviceApp } from '../harness/microservice-app.js';
import { TestRedis } from '../harness/redis-server.js';
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
  let close: () => Promise<void>;
  beforeAll(async () => {
    redis = await TestRedis.start();
    ({ app, client, close } = await microserviceApp(redis, [PaymentsController], 'rpc-outcome'));
  });
  afterAll(async () => {
    await close?.();
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

import 'reflect-metadata';
import { Controller } from '@nestjs/common';
import { MessagePattern, type ClientProxy } from '@nestjs/microservices';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { firstValueFrom } from 'rxjs';
import { MaxConcurrent } from '../../lib/index.js';
import { ADAPTERS, gatewayApp, type GatewayApp } from '../harness/gateway-app.js';
import { microserviceApp } from '../harness/microservice-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

// @MaxConcurrent where there is no HTTP response: a WebSocket message's and a microservice
// message's slot is freed when its handler ends.

/** Handlers held until the test lets them go, by job. */
const gates = new Map<string, () => void>();
const held = (job: string) => new Promise<void>((resolve) => gates.set(job, resolve));
const letGo = async (job: string) => {
  await until(
    () => gates.has(job),
    10_000,
    () => `${job} never reached its handler`,
  );
  gates.get(job)!();
  gates.delete(job);
};

@WebSocketGateway()
class ExportsGateway {
  @SubscribeMessage('export')
  @MaxConcurrent(1, { key: () => 'tenant' })
  async export(@MessageBody() body: { job: string }) {
    await held(body.job);
    return { event: 'ok', data: body.job };
  }
}

@Controller()
class ExportsMicroservice {
  @MessagePattern('export')
  @MaxConcurrent(1, { key: () => 'tenant' })
  async export(data: { job: string }) {
    await held(data.job);
    return data.job;
  }
}

describe('@MaxConcurrent beyond HTTP', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis?.stop());

  describe.each(ADAPTERS)('on a %s gateway', (adapter) => {
    let served: GatewayApp;
    beforeAll(async () => {
      served = await gatewayApp(adapter, redis.connection, {}, [ExportsGateway]);
    });
    afterAll(() => served?.close());

    it('refuses a second message while the first runs, and frees the slot when its handler ends', async () => {
      const [a, b] = [await served.connect(), await served.connect()];
      const first = a.send('export', { job: `${adapter}-1` });
      await until(
        () => gates.has(`${adapter}-1`),
        10_000,
        () => 'the first message never reached its handler',
      );
      expect(await b.send('export', { job: `${adapter}-2` })).toEqual({
        event: 'exception',
        data: { statusCode: 429, message: 'Too Many Requests', retryAfterMs: expect.any(Number) },
      });
      await letGo(`${adapter}-1`);
      expect(await first).toEqual({ event: 'ok', data: `${adapter}-1` });
      const third = b.send('export', { job: `${adapter}-3` });
      await letGo(`${adapter}-3`);
      expect(await third).toEqual({ event: 'ok', data: `${adapter}-3` });
    });
  });

  describe('on a microservice handler', () => {
    let client: ClientProxy;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ client, close } = await microserviceApp(redis, [ExportsMicroservice], 'mc-rpc'));
    });
    afterAll(() => close?.());

    const send = (job: string) => firstValueFrom(client.send<string>('export', { job })).catch((error: unknown) => ({ error }));

    it('refuses a second message while the first runs, and frees the slot when its handler ends', async () => {
      const first = send('rpc-1');
      await until(
        () => gates.has('rpc-1'),
        10_000,
        () => 'the first message never reached its handler',
      );
      expect(await send('rpc-2')).toEqual({ error: { statusCode: 429, message: 'Too Many Requests', retryAfterMs: expect.any(Number) } });
      await letGo('rpc-1');
      expect(await first).toBe('rpc-1');
      const third = send('rpc-3');
      await letGo('rpc-3');
      expect(await third).toBe('rpc-3');
    });
  });
});

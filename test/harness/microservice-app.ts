import 'reflect-metadata';
import { Module, type INestMicroservice, type Type } from '@nestjs/common';
import { ClientProxyFactory, Transport, type ClientProxy, type MicroserviceOptions } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { RedisLimitModule } from '../../lib/index.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from './limiter-app.js';
import { freePort, type TestRedis } from './redis-server.js';

/** A TCP microservice serving `controllers` with RedisLimitModule against `redis` (a key prefix
 * of its own, labelled `label`), listening on a free loopback port, and a client connected to it. */
export async function microserviceApp(
  redis: TestRedis,
  controllers: Type[],
  label: string,
): Promise<{ app: INestMicroservice; client: ClientProxy; close(): Promise<void> }> {
  const options = { host: '127.0.0.1', port: await freePort() };
  @Module({
    imports: [RedisLimitModule.forRoot({ redis: redis.connection, keyPrefix: uniquePrefix(label), commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS })],
    controllers,
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestMicroservice<MicroserviceOptions>({ transport: Transport.TCP, options, logger: false });
  await app.listen();
  const client = ClientProxyFactory.create({ transport: Transport.TCP, options });
  await client.connect();
  return {
    app,
    client,
    async close() {
      await client.close();
      await app.close();
    },
  };
}

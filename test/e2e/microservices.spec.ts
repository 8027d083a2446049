import 'reflect-metadata';
import { BadRequestException, Controller, Module, type ExecutionContext, type INestApplication, type INestMicroservice, type Type } from '@nestjs/common';
import {
  ClientProxyFactory,
  EventPattern,
  MessagePattern,
  Transport,
  type ClientOptions,
  type ClientProxy,
  type MicroserviceOptions,
} from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { firstValueFrom } from 'rxjs';
import { Funnel, MaxPending, RateLimit, RedisLimitEvents, RedisLimitModule, SkipRateLimit, type RedisLimitModuleOptions } from '../../lib/index.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from '../harness/limiter-app.js';
import { freePort, RedisNode, TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

// @nestjs/microservices handlers over real servers and real ClientProxy clients: TCP, and the
// Redis transport on a redis-server of its own (the limiter's Redis is another one, so that an
// outage of the limiter leaves the transport up).
type TransportName = 'tcp' | 'redis';
interface Message {
  user: string;
  internal?: boolean;
}

const byUser = (ctx: ExecutionContext) => ctx.switchToRpc().getData<Message>().user;
const handled: string[] = [];

@Controller()
class QuotesController {
  @MessagePattern('quote')
  @RateLimit({ limit: 2, windowMs: 60_000, key: byUser })
  quote(data: Message) {
    handled.push(`quote:${data.user}`);
    return { quoted: data.user };
  }

  // no decorator: the module's defaultLimits
  @MessagePattern('ping')
  ping(data: Message) {
    return { pong: data.user };
  }

  @MessagePattern('health')
  @SkipRateLimit()
  health() {
    return { status: 'ok' };
  }

  @MessagePattern('strict')
  @RateLimit({
    limit: 5,
    windowMs: 60_000,
    key: (ctx) => {
      const { user } = ctx.switchToRpc().getData<Message>();
      if (user === '') throw new BadRequestException('user is required');
      return user;
    },
  })
  strict(data: Message) {
    return { strict: data.user };
  }

  @MessagePattern('drip')
  @Funnel({ capacity: 1, leakingDurationMs: 60_000, key: byUser })
  drip(data: Message) {
    return { dripped: data.user };
  }

  @EventPattern('audit')
  @RateLimit({ limit: 2, windowMs: 60_000, key: byUser })
  audit(data: Message) {
    handled.push(`audit:${data.user}`);
  }
}

@Controller()
class KeylessController {
  @MessagePattern('keyless')
  @RateLimit({ limit: 2, windowMs: 60_000 })
  keyless() {
    return {};
  }
}

@Controller()
class JobsController {
  @MessagePattern('start')
  @MaxPending(1, { ttlMs: 60_000, name: 'jobs', owner: byUser })
  start() {
    return {};
  }
}

const MODULE_OPTIONS: RedisLimitModuleOptions = {
  defaultLimits: [{ limit: 3, windowMs: 60_000, key: byUser }],
  skipIf: (ctx) => ctx.getType() === 'rpc' && ctx.switchToRpc().getData<Message>().internal === true,
};

interface Endpoints {
  server: MicroserviceOptions;
  client: ClientOptions;
}

async function endpoints(transport: TransportName, transportRedis: RedisNode | undefined): Promise<Endpoints> {
  if (transport === 'tcp') {
    const options = { host: '127.0.0.1', port: await freePort() };
    return { server: { transport: Transport.TCP, options }, client: { transport: Transport.TCP, options } };
  }
  const options = { host: transportRedis!.host, port: transportRedis!.port };
  return { server: { transport: Transport.REDIS, options }, client: { transport: Transport.REDIS, options } };
}

let users = 0;
const newUser = () => `u${++users}`;

describe.each<TransportName>(['tcp', 'redis'])('microservices over %s', (transport) => {
  let limiterRedis: TestRedis;
  let transportRedis: RedisNode | undefined;
  let app: INestMicroservice | INestApplication | undefined;
  let client: ClientProxy | undefined;

  beforeAll(async () => {
    limiterRedis = await TestRedis.start();
    if (transport === 'redis') transportRedis = await RedisNode.start({ own: true });
  });

  afterAll(async () => {
    await limiterRedis?.stop();
    await transportRedis?.stop();
  });

  beforeEach(() => {
    handled.length = 0;
  });

  afterEach(async () => {
    await client?.close();
    await app?.close();
    client = undefined;
    app = undefined;
  });

  /** A standalone microservice (NestFactory.createMicroservice's path) and a client of it. */
  async function boot(options: RedisLimitModuleOptions, controllers: Type[] = [QuotesController], limiter: TestRedis = limiterRedis) {
    const { server, client: clientOptions } = await endpoints(transport, transportRedis);
    @Module({
      imports: [RedisLimitModule.forRoot({ redis: limiter.connection, keyPrefix: uniquePrefix('rpc'), commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS, ...options })],
      controllers,
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    const microservice = moduleRef.createNestMicroservice<MicroserviceOptions>({ ...server, logger: false });
    try {
      await microservice.listen();
    } catch (error) {
      await microservice.close();
      throw error;
    }
    app = microservice;
    client = ClientProxyFactory.create(clientOptions);
    await client.connect();
    return { microservice, client };
  }

  const send = (pattern: string, data: Message) => firstValueFrom(client!.send<unknown>(pattern, data));
  const refusal = (pattern: string, data: Message) =>
    send(pattern, data).then(
      (answer) => ({ answered: answer }),
      (error: unknown) => error,
    );

  it('answers `limit` messages, then the client gets 429 with retryAfterMs', async () => {
    await boot(MODULE_OPTIONS);
    const user = newUser();
    await expect(send('quote', { user })).resolves.toEqual({ quoted: user });
    await expect(send('quote', { user })).resolves.toEqual({ quoted: user });
    const error = await refusal('quote', { user });
    expect(error).toEqual({ statusCode: 429, message: 'Too Many Requests', retryAfterMs: expect.any(Number) });
    expect((error as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(0);
    expect(handled).toEqual([`quote:${user}`, `quote:${user}`]);
    // another key has its own counter
    const other = newUser();
    await expect(send('quote', { user: other })).resolves.toEqual({ quoted: other });
  });

  it('applies defaultLimits to an undecorated handler (the module APP_GUARD runs for RPC)', async () => {
    await boot(MODULE_OPTIONS);
    const user = newUser();
    for (let i = 0; i < 3; i++) await expect(send('ping', { user })).resolves.toEqual({ pong: user });
    await expect(refusal('ping', { user })).resolves.toMatchObject({ statusCode: 429, message: 'Too Many Requests' });
  });

  it('@SkipRateLimit skips the defaults; skipIf skips a limit', async () => {
    await boot(MODULE_OPTIONS);
    const user = newUser();
    for (let i = 0; i < 5; i++) await expect(send('health', { user })).resolves.toEqual({ status: 'ok' });
    for (let i = 0; i < 4; i++) await expect(send('quote', { user, internal: true })).resolves.toEqual({ quoted: user });
    await expect(send('quote', { user })).resolves.toEqual({ quoted: user });
    await expect(send('quote', { user })).resolves.toEqual({ quoted: user });
    await expect(refusal('quote', { user })).resolves.toMatchObject({ statusCode: 429 });
  });

  it("answers a key function's HttpException with its body, not an internal error", async () => {
    await boot(MODULE_OPTIONS);
    await expect(send('strict', { user: 'u1' })).resolves.toEqual({ strict: 'u1' });
    await expect(refusal('strict', { user: '' })).resolves.toEqual({ statusCode: 400, message: 'user is required', error: 'Bad Request' });
  });

  it('@Funnel refuses over its capacity', async () => {
    await boot(MODULE_OPTIONS);
    const user = newUser();
    await expect(send('drip', { user })).resolves.toEqual({ dripped: user });
    await expect(refusal('drip', { user })).resolves.toMatchObject({ statusCode: 429, message: 'Too Many Requests' });
  });

  it('drops an event over its limit: the handler runs `limit` times', async () => {
    const { microservice } = await boot(MODULE_OPTIONS);
    const counters = () => microservice.get(RedisLimitEvents).counters().decisions;
    const before = counters();
    const user = newUser();
    for (let i = 0; i < 4; i++) await firstValueFrom(client!.emit('audit', { user }), { defaultValue: undefined });
    // all four decided (two refused) and the two allowed handled: nothing more can run
    await until(
      () => counters().refused - before.refused === 2 && counters().allowed - before.allowed === 2 && handled.length === 2,
      10_000,
      () => `decisions ${JSON.stringify(counters())}, handled ${JSON.stringify(handled)}`,
    );
    expect(handled).toEqual([`audit:${user}`, `audit:${user}`]);
  });

  describe("while the limiter's Redis is down", () => {
    let ownLimiter: RedisNode;

    beforeEach(async () => {
      ownLimiter = await RedisNode.start({ own: true });
    });

    afterEach(async () => {
      await ownLimiter.stop();
    });

    const bootWithOutage = async (failMode: 'open' | 'closed') => {
      await boot({ ...MODULE_OPTIONS, commandTimeoutMs: 200, failMode }, [QuotesController], ownLimiter);
      await ownLimiter.stop();
    };

    it("failMode 'closed' refuses with statusCode 503", async () => {
      await bootWithOutage('closed');
      const user = newUser();
      await expect(refusal('quote', { user })).resolves.toEqual({ statusCode: 503, message: 'Rate limiter unavailable' });
      expect(handled).toEqual([]);
    });

    it("failMode 'open' lets messages through", async () => {
      await bootWithOutage('open');
      const user = newUser();
      for (let i = 0; i < 3; i++) await expect(send('quote', { user })).resolves.toEqual({ quoted: user });
    });
  });

  it('a limit without key on an RPC handler, and no module tracker, fails app.init() naming Class.method', async () => {
    await expect(boot({}, [KeylessController])).rejects.toThrow(/KeylessController\.keyless: @RateLimit\(#1\) has no key/);
    // a module tracker is the default key
    await boot({ tracker: byUser }, [KeylessController]);
    const user = newUser();
    await expect(send('keyless', { user })).resolves.toEqual({});
    await expect(send('keyless', { user })).resolves.toEqual({});
    await expect(refusal('keyless', { user })).resolves.toMatchObject({ statusCode: 429 });
  });

  it('@MaxPending on an RPC handler fails app.init() naming Class.method', async () => {
    await expect(boot({}, [JobsController])).rejects.toThrow(/JobsController\.start: @MaxPending cannot take effect here: a microservice handler/);
  });

  it('a hybrid app with inheritAppConfig applies defaultLimits to its microservice handlers', async () => {
    const { server, client: clientOptions } = await endpoints(transport, transportRedis);
    @Module({
      imports: [
        RedisLimitModule.forRoot({
          redis: limiterRedis.connection,
          keyPrefix: uniquePrefix('rpc-hybrid'),
          commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS,
          ...MODULE_OPTIONS,
        }),
      ],
      controllers: [QuotesController],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    const hybrid = moduleRef.createNestApplication({ logger: false });
    app = hybrid;
    hybrid.connectMicroservice<MicroserviceOptions>(server, { inheritAppConfig: true });
    await hybrid.init();
    await hybrid.startAllMicroservices();
    client = ClientProxyFactory.create(clientOptions);
    await client.connect();
    const user = newUser();
    for (let i = 0; i < 3; i++) await expect(send('ping', { user })).resolves.toEqual({ pong: user });
    await expect(refusal('ping', { user })).resolves.toMatchObject({ statusCode: 429 });
    await expect(send('quote', { user })).resolves.toEqual({ quoted: user });
  });
});

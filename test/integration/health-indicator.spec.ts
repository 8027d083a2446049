import 'reflect-metadata';
import { Controller, Get, Inject } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { DelayQueueService, RedisLimitHealthIndicator, Unrecoverable, type RedisLimitHealthOptions } from '../../lib/index.js';
import { controllerApp, type ControllerApp } from '../harness/controller-app.js';
import { RedisNode } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

// RedisLimitHealthIndicator inside a real @nestjs/terminus health check: Redis answering, a queue
// past its dead or overdue threshold, and a Redis that does not answer (a paused server).
let checked: RedisLimitHealthOptions = {};

@Controller('health')
class HealthController {
  constructor(
    @Inject(HealthCheckService) private readonly health: HealthCheckService,
    @Inject(RedisLimitHealthIndicator) private readonly redisLimit: RedisLimitHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.redisLimit.isHealthy('redis-limit', checked)]);
  }
}

describe('RedisLimitHealthIndicator (terminus)', () => {
  let redis: RedisNode;
  let app: ControllerApp;
  let queues: DelayQueueService;
  let indicator: RedisLimitHealthIndicator;

  beforeAll(async () => {
    // paused by one test: a server of its own
    redis = await RedisNode.start({ own: true });
    app = await controllerApp(redis, { controllers: [HealthController], imports: [TerminusModule.forRoot({ logger: false })] });
    queues = app.app.get(DelayQueueService);
    indicator = app.app.get(RedisLimitHealthIndicator);
  });

  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  beforeEach(() => {
    checked = {};
  });

  it('is up while Redis answers, with the round trip', async () => {
    const res = await app.http.get('/health');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ok');
    expect(res.body.details['redis-limit']).toEqual({ status: 'up', pingMs: expect.any(Number) });
  });

  it('reports each queue asked about, and is down past a threshold of overdue messages', async () => {
    const past = Date.now() - 60_000;
    await queues.enqueue('health-overdue', { n: 1 }, { runAt: past, id: 'a' });
    await queues.enqueue('health-overdue', { n: 2 }, { runAt: past, id: 'b' });
    // no consumer: both stay scheduled, due a minute ago
    checked = { queues: { 'health-overdue': { maxOverdue: 2, overdueAfterMs: 10_000 } } };
    const within = await app.http.get('/health');
    expect(within.status).toBe(200);
    expect(within.body.details['redis-limit'].queues['health-overdue']).toEqual({ scheduled: 2, inFlight: 0, dead: 0, overdue: 2 });

    checked = { queues: { 'health-overdue': { maxOverdue: 1, overdueAfterMs: 10_000 } } };
    const past1 = await app.http.get('/health');
    expect(past1.status).toBe(503);
    expect(past1.body.status).toBe('error');
    const detail = past1.body.error['redis-limit'];
    expect(detail.status).toBe('down');
    expect(detail.message).toContain('queue health-overdue: 2 overdue by 10000 ms (more than 1)');
    expect(detail.queues['health-overdue'].down).toContain('overdue');

    // due a minute ago is not overdue by two minutes
    checked = { queues: { 'health-overdue': { maxOverdue: 0, overdueAfterMs: 120_000 } } };
    expect((await app.http.get('/health')).status).toBe(200);
  });

  it('is down past a threshold of dead messages', async () => {
    const consumer = queues.consume('health-dead', () => {
      throw new Unrecoverable('poison');
    });
    try {
      await queues.enqueue('health-dead', { n: 1 }, { delayMs: 0 });
      await until(
        async () => (await queues.size('health-dead')).dead === 1,
        15_000,
        () => 'the message to die',
      );
    } finally {
      await consumer.stop();
    }
    checked = { queues: { 'health-dead': { maxDead: 1 } } };
    expect((await app.http.get('/health')).status).toBe(200);
    checked = { queues: { 'health-dead': { maxDead: 0 } } };
    const res = await app.http.get('/health');
    expect(res.status).toBe(503);
    expect(res.body.error['redis-limit'].message).toBe('queue health-dead: 1 dead (more than 0)');
  });

  it('is down, not hung, when Redis does not answer within timeoutMs', async () => {
    checked = { timeoutMs: 300, queues: { 'health-overdue': { maxOverdue: 100 } } };
    redis.signal('SIGSTOP');
    let res;
    try {
      res = await app.http.get('/health');
    } finally {
      redis.signal('SIGCONT');
    }
    expect(res.status).toBe(503);
    expect(res.body.error['redis-limit']).toEqual({ status: 'down', message: 'Redis did not answer PING within 300 ms' });
    // and up again once it answers
    checked = {};
    await until(
      async () => (await app.http.get('/health')).status === 200,
      15_000,
      () => 'the check to be up again',
    );
  });

  it('throws on bad options, naming them', async () => {
    await expect(indicator.isHealthy('')).rejects.toThrow(new TypeError('key must be a non-empty string, got ""'));
    await expect(indicator.isHealthy('r', { timeoutMs: 0 })).rejects.toThrow(RangeError);
    await expect(indicator.isHealthy('r', { timeoutMs: 0 })).rejects.toThrow(/options\.timeoutMs/);
    await expect(indicator.isHealthy('r', { queues: { q: { maxDead: -1 } } })).rejects.toThrow(/options\.queues\.q\.maxDead must be an integer >= 0/);
    await expect(indicator.isHealthy('r', { queues: { q: { maxDead: 1.5 } } })).rejects.toThrow(RangeError);
    await expect(indicator.isHealthy('r', { queues: { q: { maxdead: 1 } as never } })).rejects.toThrow(
      new TypeError('options.queues.q.maxdead is not an option (maxDead, maxOverdue, overdueAfterMs)'),
    );
    await expect(indicator.isHealthy('r', { retries: 1 } as never)).rejects.toThrow(TypeError);
    await expect(indicator.isHealthy('r', { queues: { '': {} } })).rejects.toThrow(TypeError);
  });
});

describe('DelayQueueService.size, overdue', () => {
  let redis: RedisNode;
  let app: ControllerApp;
  let queues: DelayQueueService;

  beforeAll(async () => {
    redis = await RedisNode.start();
    app = await controllerApp(redis, { controllers: [] });
    queues = app.app.get(DelayQueueService);
  });

  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('counts the scheduled messages due longer ago than overdueAfterMs, only when asked', async () => {
    const now = Date.now();
    await queues.enqueue('sized', 1, { runAt: now - 30_000, id: 'old' });
    await queues.enqueue('sized', 2, { runAt: now - 1_000, id: 'recent' });
    await queues.enqueue('sized', 3, { delayMs: 60_000, id: 'later' });
    expect(await queues.size('sized')).toEqual({ scheduled: 3, inFlight: 0, dead: 0 });
    expect(await queues.size('sized', { overdueAfterMs: 10_000 })).toEqual({ scheduled: 3, inFlight: 0, dead: 0, overdue: 1 });
    expect((await queues.size('sized', { overdueAfterMs: 0 })).overdue).toBe(2);
    expect((await queues.size('sized', { overdueAfterMs: 120_000 })).overdue).toBe(0);
  });

  it('refuses a bad overdueAfterMs, naming it', async () => {
    await expect(queues.size('sized', { overdueAfterMs: -1 })).rejects.toThrow(new RangeError('opts.overdueAfterMs must be an integer >= 0 (ms), got -1'));
    await expect(queues.size('sized', { overdueAfterMs: '5' as never })).rejects.toThrow(TypeError);
    await expect(queues.size('sized', { overdue: 5 } as never)).rejects.toThrow(new TypeError('opts.overdue is not an option (overdueAfterMs)'));
    await expect(queues.size('sized', null as never)).rejects.toThrow(TypeError);
  });
});

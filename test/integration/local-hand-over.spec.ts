import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LoggerService } from '@nestjs/common';
import { Controller, Get } from '@nestjs/common';
import { Funnel, RateLimit, RateLimiterService, RedisLimitEvents } from '../../lib/index.js';
import { controllerApp, type ControllerApp } from '../harness/controller-app.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { TestRedis } from '../harness/redis-server.js';

// failMode 'local' hands over (issue 26 item 10): three app instances share one Redis that is
// stopped, loses its counters (no persistence) and comes back. While it is down each instance
// grants ceil(limit / localDivisor) locally; once it answers again each charges Redis's counters
// with what it granted in windows still open, so the window that spans the outage's end holds at
// most limit + ceil(limit / localDivisor) per instance, however many Redis granted before it.

const APPS = 3;
const LIMIT = 5;
const DIVISOR = 3;
const LOCAL = Math.ceil(LIMIT / DIVISOR); // 2
// long windows: none ends or refills noticeably while the test runs (a fixed window of a year,
// aligned to the epoch, ends at a new year only; a bucket of 5 an hour refills one in 12 minutes)
const YEAR_MS = 365 * 24 * 3_600_000;
const HOUR_MS = 3_600_000;
// a limit with room left after the outage, to see exactly what was charged
const WIDE = 30;
const WIDE_LOCAL = Math.ceil(WIDE / DIVISOR); // 10
const WIDE_GRANTED = 3; // per instance, while Redis is down

const shared = () => 'shared';

@Controller('handover')
class HandOverController {
  @Get('fixed')
  @RateLimit({ limit: LIMIT, windowMs: YEAR_MS, algorithm: 'fixed-window', key: shared })
  fixed() {
    return 'ok';
  }

  @Get('sliding')
  @RateLimit({ limit: LIMIT, windowMs: HOUR_MS, key: shared })
  sliding() {
    return 'ok';
  }

  @Get('bucket')
  @RateLimit({ limit: LIMIT, windowMs: HOUR_MS, algorithm: 'token-bucket', key: shared })
  bucket() {
    return 'ok';
  }

  @Get('funnel')
  @Funnel({ capacity: LIMIT, leakingDurationMs: HOUR_MS, key: shared })
  funnel() {
    return 'ok';
  }

  @Get('wide')
  @RateLimit({ limit: WIDE, windowMs: HOUR_MS, name: 'handover-wide', key: shared })
  wide() {
    return 'ok';
  }
}

/** Keeps every line Nest logs, of every app in this process. */
class LineLog implements LoggerService {
  readonly lines: string[] = [];
  log(message: unknown): void {
    this.lines.push(String(message));
  }
  error(message: unknown): void {
    this.log(message);
  }
  warn(message: unknown): void {
    this.log(message);
  }
  debug(): void {}
  verbose(): void {}
  fatal(message: unknown): void {
    this.log(message);
  }
}

const ROUTES = ['fixed', 'sliding', 'bucket', 'funnel'] as const;

describe("failMode 'local' hands over to Redis when it answers again", () => {
  let redis: TestRedis;
  const apps: ControllerApp[] = [];
  const ups: number[] = Array(APPS).fill(0);
  const log = new LineLog();
  beforeAll(async () => {
    redis = await TestRedis.start({ own: true }); // stopped and restarted by the test
    const keyPrefix = uniquePrefix('handover'); // one prefix: the instances share their counters
    for (let i = 0; i < APPS; i++) {
      const app = await controllerApp(redis, {
        controllers: [HandOverController],
        logger: log,
        // no refusal cache: every request asks Redis (a cluster's instances notice their lost
        // subscriptions, which empty it, only after a while)
        options: { keyPrefix, failMode: 'local', localDivisor: DIVISOR, commandTimeoutMs: 3000, refusalCache: false },
      });
      app.app.get(RedisLimitEvents).on((event) => {
        if (event.type === 'redis-limit.redis-up') ups[i]! += 1;
      });
      apps.push(app);
    }
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await redis.stop();
  });

  const get = (app: number, route: string) => apps[app]!.http.get(`/handover/${route}`);

  /** Grants of `rounds` requests to each instance in turn, each asserted decided with `limit`. */
  async function grants(route: string, rounds: number, limit: number, instances = [0, 1, 2]): Promise<number> {
    let granted = 0;
    for (let round = 0; round < rounds; round++) {
      for (const i of instances) {
        const response = await get(i, route);
        expect(response.headers['x-ratelimit-limit']).toBe(String(limit));
        expect([200, 429]).toContain(response.status);
        if (response.status === 200) granted += 1;
      }
    }
    return granted;
  }

  it('the window that spans the outage grants at most limit + ceil(limit / localDivisor) per instance', async () => {
    // before the outage Redis grants the whole limit, spread over the instances
    const before: Record<string, number> = {};
    for (const route of ROUTES) before[route] = await grants(route, 3, LIMIT);
    expect(before).toEqual({ fixed: LIMIT, sliding: LIMIT, bucket: LIMIT, funnel: LIMIT });

    await redis.stop(); // its counters are lost with it

    // each instance grants ceil(limit / localDivisor) from its own memory
    const during: Record<string, number> = {};
    for (const route of ROUTES) during[route] = await grants(route, LOCAL + 2, LOCAL);
    expect(during).toEqual({ fixed: APPS * LOCAL, sliding: APPS * LOCAL, bucket: APPS * LOCAL, funnel: APPS * LOCAL });
    expect(await grants('wide', WIDE_GRANTED, WIDE_LOCAL)).toBe(APPS * WIDE_GRANTED);

    await redis.resume();
    // every instance reconnects (ioredis backs off up to a second) and says Redis is back; its
    // hand-over is sent then (a cluster still settling may take a retry): give it time, no more
    const charged = () => log.lines.filter((line) => line.startsWith('Charged Redis with'));
    for (const deadline = Date.now() + 20_000; (ups.includes(0) || charged().length < APPS) && Date.now() < deadline;) await sleep(50);
    expect(ups.every((n) => n >= 1)).toBe(true);

    // Redis decides again, its counters holding what the instances granted while it was down
    const after: Record<string, number> = {};
    for (const route of ROUTES) after[route] = await grants(route, 3, LIMIT);
    const window = Object.fromEntries(ROUTES.map((route) => [route, before[route]! + during[route]! + after[route]!]));
    const bound = LIMIT + APPS * LOCAL;
    expect({ window, over: ROUTES.filter((route) => window[route]! > bound) }).toEqual({ window, over: [] });

    // exactly what was granted locally was charged, once
    const wide = { key: 'shared', scope: 'handover-wide', policy: { limit: WIDE, windowMs: HOUR_MS } };
    const peek = () => apps[0]!.app.get(RateLimiterService).decide([wide], { peek: true });
    expect((await peek()).decisions[0]!.remaining).toBe(WIDE - APPS * WIDE_GRANTED);
    expect(await grants('wide', 1, WIDE)).toBe(APPS);
    expect((await peek()).decisions[0]!.remaining).toBe(WIDE - APPS * WIDE_GRANTED - APPS);
    expect(charged()).toEqual(
      Array(APPS).fill(`Charged Redis with ${4 * LOCAL + WIDE_GRANTED} permits granted locally (failMode 'local') in windows still open`),
    );
  });
});

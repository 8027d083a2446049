// A soak web worker: a Nest (Express) app whose routes carry the library's guards, driven by this
// same process' load loops over loopback HTTP, plus a producer of delay messages. It logs every
// answer, every grant and every slot, and writes the log when the controller says stop.
import 'reflect-metadata';
import { AsyncLocalStorage } from 'node:async_hooks';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Module,
  Param,
  Post,
  Req,
  Res,
  ServiceUnavailableException,
  UnauthorizedException,
  type ExecutionContext,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  DelayQueueService,
  ExpiringHashService,
  Funnel,
  MaxConcurrent,
  MaxPending,
  PendingSlot,
  RateLimit,
  RedisLimitError,
  RedisLimitEvents,
  RedisLimitModule,
} from '../../lib/index.js';
import { now, runWorker, shareClock, SOAK, type Route, type WebLog, type WorkerConfig } from './config.js';

const config = JSON.parse(process.argv[2]!) as WorkerConfig;
shareClock(config.clockOffsetMs);
const log: WebLog = {
  name: config.name,
  grants: { hot: [], sliding: [], cold: [], funnel: [], lock: [], flood: [], local: [] },
  logins: [],
  refusals: [],
  localGrants: [],
  answers: [],
  slots: [],
  exports: [],
  enqueued: [],
  uncertain: [],
  counters: undefined as unknown as WebLog['counters'],
  clientErrors: 0,
  originSkewMs: performance.timeOrigin + performance.now() - now(),
};

// the little of Express' request and response the worker uses (no @types/express here)
interface Timed {
  method: string;
  path: string;
  params: Record<string, string>;
  soakStart?: number;
  /** Date.now() at arrival: the clock failMode 'local' decides on. */
  soakStartDate?: number;
}

/** What the library's events said about one request (they fire in the request's async context). */
interface Heard {
  /** Decided in process memory (failMode 'local'). */
  local?: boolean;
  /** A blockMs lockout was set in Redis. */
  blocked?: boolean;
  /** Refused from the refusal cache. */
  cached?: boolean;
  /** The /login entry whose refund completion to note. */
  login?: WebLog['logins'][number];
}
const heard = new AsyncLocalStorage<Heard>();
interface Response {
  statusCode: number;
  locals: Record<string, unknown>;
  getHeader(name: string): unknown;
  on(event: 'finish', listener: () => void): void;
}
const param = (name: string) => (ctx: ExecutionContext) => String(ctx.switchToHttp().getRequest<Timed>().params[name]);
const fixed = (key: string) => () => key;

/** A grant is logged only when Redis decided it: a fail-open pass sets no rate-limit headers. */
function grant(route: keyof WebLog['grants'], key: string, req: Timed, res: Response): { decided: boolean } {
  const decided = res.getHeader('X-RateLimit-Remaining') !== undefined;
  if (decided) log.grants[route].push([key, req.soakStart!, now()]);
  else res.locals['unchecked'] = true;
  return { decided };
}

const countFailures = (_: ExecutionContext, outcome: { statusCode: number }) => outcome.statusCode >= 400;

@Controller()
class SoakController {
  constructor(@Inject(ExpiringHashService) private readonly hash: ExpiringHashService) {}

  @Get('hot')
  @RateLimit({ ...SOAK.hot, algorithm: 'fixed-window', key: fixed('hot'), failMode: 'closed' })
  hot(@Res({ passthrough: true }) res: Response, @Req() req: Timed) {
    return grant('hot', 'hot', req, res);
  }

  @Get('sliding')
  @RateLimit({ ...SOAK.sliding, algorithm: 'sliding-window', key: fixed('sliding'), failMode: 'open' })
  sliding(@Res({ passthrough: true }) res: Response, @Req() req: Timed) {
    return grant('sliding', 'sliding', req, res);
  }

  @Get('cold/:k')
  @RateLimit({ limit: SOAK.cold.limit, windowMs: SOAK.cold.windowMs, algorithm: 'token-bucket', key: param('k'), failMode: 'closed' })
  cold(@Res({ passthrough: true }) res: Response, @Req() req: Timed, @Param('k') k: string) {
    return grant('cold', k, req, res);
  }

  @Get('funnel')
  @Funnel({ ...SOAK.funnel, key: fixed('funnel'), failMode: 'closed' })
  funnel(@Res({ passthrough: true }) res: Response, @Req() req: Timed) {
    return grant('funnel', 'funnel', req, res);
  }

  @Get('login/:acct')
  @RateLimit({
    limit: SOAK.login.limit,
    windowMs: SOAK.login.windowMs,
    algorithm: 'sliding-window',
    key: param('acct'),
    failMode: 'closed',
    countIf: countFailures,
  })
  login(@Req() req: Timed, @Param('acct') acct: string) {
    const failed = Math.random() < 0.5;
    const entry: WebLog['logins'][number] = [acct, req.soakStart!, now(), failed ? 1 : 0, -1];
    log.logins.push(entry);
    heard.getStore()!.login = entry;
    if (failed) throw new UnauthorizedException();
    return {};
  }

  @Get('lock/:k')
  @RateLimit({
    limit: SOAK.lock.limit,
    windowMs: SOAK.lock.windowMs,
    algorithm: 'sliding-window',
    key: param('k'),
    failMode: 'closed',
    blockMs: SOAK.lock.blockMs,
  })
  lock(@Res({ passthrough: true }) res: Response, @Req() req: Timed, @Param('k') k: string) {
    return grant('lock', k, req, res);
  }

  @Get('flood')
  @RateLimit({ limit: SOAK.flood.limit, windowMs: SOAK.flood.windowMs, algorithm: 'fixed-window', key: fixed('flood'), failMode: 'closed' })
  flood(@Res({ passthrough: true }) res: Response, @Req() req: Timed) {
    return grant('flood', 'flood', req, res);
  }

  @Get('local')
  @RateLimit({ limit: SOAK.local.limit, windowMs: SOAK.local.windowMs, algorithm: 'fixed-window', key: fixed('local'), failMode: 'local' })
  local(@Res({ passthrough: true }) res: Response, @Req() req: Timed) {
    // a local decision sets rate-limit headers too: only the event tells it from Redis's
    if (!heard.getStore()!.local) return grant('local', 'local', req, res);
    log.localGrants.push(['local', req.soakStartDate!, Date.now()]);
    return { decided: false };
  }

  @Get('exports/:k')
  @MaxConcurrent(SOAK.concurrent.limit, { key: param('k'), name: SOAK.concurrent.name, leaseMs: SOAK.concurrent.leaseMs })
  async exports(@Param('k') k: string) {
    // logged inside the handler, so inside the slot (taken before it, given back after it)
    const start = now();
    await sleep(SOAK.concurrent.holdMs * (0.5 + Math.random()));
    log.exports.push([k, start, now()]);
    return {};
  }

  @Post('orders/:owner')
  @MaxPending(SOAK.pending.max, { name: SOAK.pending.name, ttlMs: SOAK.pending.ttlMs, owner: param('owner'), failMode: 'closed', notify: SOAK.pending.notify })
  order(@PendingSlot() slot: string) {
    return { slot };
  }

  @Delete('orders/:owner/:slot')
  @HttpCode(200)
  async pay(@Param('owner') owner: string, @Param('slot') slot: string) {
    try {
      return { deleted: await this.hash.delete(`${SOAK.pending.name}:${owner}`, slot) };
    } catch (error) {
      // Redis away: the app's own answer (the slot then lapses after its ttl)
      if (error instanceof RedisLimitError) throw new ServiceUnavailableException();
      throw error;
    }
  }
}

@Module({
  imports: [
    RedisLimitModule.forRoot({ redis: config.redisUrl, keyPrefix: SOAK.keyPrefix, commandTimeoutMs: SOAK.commandTimeoutMs, localDivisor: SOAK.local.divisor }),
  ],
  controllers: [SoakController],
})
class SoakModule {}

async function main(): Promise<() => Promise<string>> {
  const app = await NestFactory.create(SoakModule, { logger: ['error', 'warn'] });
  const events = app.get(RedisLimitEvents);
  events.on((event) => {
    const request = heard.getStore();
    if (request === undefined) return;
    if (event.type === 'redis-limit.local-decision') request.local = true;
    else if (event.type === 'redis-limit.block') request.blocked = true;
    else if (event.type === 'redis-limit.decision' && event.cached === true) request.cached = true;
    else if (event.type === 'redis-limit.refund' && request.login) request.login[4] = now();
  });
  app.use((req: Timed, res: Response, next: () => void) => {
    req.soakStart = now();
    req.soakStartDate = Date.now();
    const request: Heard = {};
    res.on('finish', () => {
      // GET /hot, /sliding, /cold/:k, ...: the route is the first segment
      const [, first, key = first!] = req.path.split('/');
      const route = (req.method === 'POST' ? 'order' : req.method === 'DELETE' ? 'pay' : first) as Route;
      const byFailMode = res.statusCode === 503 || res.locals['unchecked'] === true || request.local === true;
      const end = now();
      log.answers.push([route, req.soakStart!, end, res.statusCode, byFailMode ? 1 : 0]);
      if ((route === 'login' || route === 'lock') && res.statusCode === 429)
        log.refusals.push([route, key, req.soakStart!, end, request.blocked ? 1 : 0, request.cached ? 1 : 0]);
      if (route === 'login' && res.statusCode === 503) log.refusals.push(['login-503', key, req.soakStart!, end, 0, 0]);
    });
    heard.run(request, next);
  });
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as { port: number }).port;
  const base = `http://127.0.0.1:${port}`;
  const queue = app.get(DelayQueueService);

  let running = true;
  const loops: Promise<void>[] = [];
  const payments = new Set<Promise<void>>();

  const call = async (method: string, path: string): Promise<{ status: number; body: unknown } | undefined> => {
    try {
      const res = await fetch(base + path, { method, signal: AbortSignal.timeout(5000) });
      return { status: res.status, body: await res.json().catch(() => undefined) };
    } catch {
      log.clientErrors += 1;
      return undefined;
    }
  };

  const order = async () => {
    const owner = `u${Math.floor(Math.random() * SOAK.pending.owners)}`;
    const start = now();
    const res = await call('POST', `/orders/${owner}`);
    if (res?.status !== 201) return;
    const entry: WebLog['slots'][number] = [owner, (res.body as { slot: string }).slot, start, now(), -1];
    log.slots.push(entry);
    if (Math.random() < 0.5) return; // left unpaid: it lapses after ttlMs
    const paying = (async () => {
      await sleep(Math.random() * SOAK.pending.ttlMs);
      entry[4] = now();
      await call('DELETE', `/orders/${owner}/${entry[1]}`);
    })();
    payments.add(paying);
    void paying.finally(() => payments.delete(paying));
  };

  const step = (): Promise<unknown> => {
    const r = Math.random();
    if (r < 0.2) return call('GET', '/hot');
    if (r < 0.34) return call('GET', '/sliding');
    if (r < 0.48) return call('GET', `/cold/k${Math.floor(Math.random() * SOAK.cold.keys)}`);
    if (r < 0.56) return call('GET', '/funnel');
    if (r < 0.66) return call('GET', `/login/a${Math.floor(Math.random() * SOAK.login.accounts)}`);
    if (r < 0.78) return call('GET', `/lock/k${Math.floor(Math.random() * SOAK.lock.keys)}`);
    return order();
  };

  // each loop paces itself to its share of the rate, so an outage does not turn into a flood after
  const LOOPS = 4;
  const gapMs = (1000 * LOOPS) / (config.rate ?? 100);
  for (let l = 0; l < LOOPS; l++) {
    loops.push(
      (async () => {
        while (running) {
          const started = now();
          await step();
          await sleep(Math.max(0, gapMs * (0.5 + Math.random()) - (now() - started)));
        }
      })(),
    );
  }

  // a loop each: /flood, so the refusal cache meets a steady stream of refusals of one key; /local,
  // so that an outage meets more requests than a worker may grant on its own
  for (const [path, rate] of [
    ['/flood', SOAK.flood.rate],
    ['/local', SOAK.local.rate],
  ] as const) {
    const gap = 1000 / rate;
    loops.push(
      (async () => {
        while (running) {
          const started = now();
          await call('GET', path);
          await sleep(Math.max(0, gap * (0.5 + Math.random()) - (now() - started)));
        }
      })(),
    );
  }

  // /exports/:k: loops of their own, each with one request in flight, so a key often has more
  // requests at once than its cap across the workers
  for (let l = 0; l < SOAK.concurrent.loops; l++) {
    loops.push(
      (async () => {
        while (running) {
          await call('GET', `/exports/k${Math.floor(Math.random() * SOAK.concurrent.keys)}`);
          await sleep(SOAK.concurrent.holdMs * Math.random());
        }
      })(),
    );
  }

  let n = 0;
  const enqueueGap = 1000 / (config.enqueueRate ?? 20);
  const sends = new Set<Promise<void>>();
  loops.push(
    (async () => {
      while (running) {
        const id = `${config.name}-${(n += 1)}`;
        const sending = queue.enqueue(SOAK.queue.name, { id }, { id, delayMs: Math.floor(Math.random() * SOAK.queue.maxDelayMs) }).then(
          () => void log.enqueued.push(id),
          () => void log.uncertain.push(id),
        );
        sends.add(sending);
        void sending.finally(() => sends.delete(sending));
        await sleep(enqueueGap);
      }
    })(),
  );

  return async () => {
    running = false;
    await Promise.all(loops);
    await Promise.all([...payments, ...sends]);
    log.counters = events.counters();
    const file = join(config.dir, `${config.name}.json`);
    writeFileSync(file, JSON.stringify(log));
    await app.close();
    return file;
  };
}

runWorker(main);

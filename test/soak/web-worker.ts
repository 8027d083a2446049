// A soak web worker: a Nest (Express) app whose routes carry the library's guards, driven by this
// same process' load loops over loopback HTTP, plus a producer of delay messages. It logs every
// answer, every grant and every slot, and writes the log when the controller says stop.
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Controller, Delete, Get, HttpCode, Inject, Module, Param, Post, Req, Res, ServiceUnavailableException, type ExecutionContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  DelayQueueService,
  ExpiringHashService,
  Funnel,
  MaxPending,
  PendingSlot,
  RateLimit,
  RedisLimitError,
  RedisLimitEvents,
  RedisLimitModule,
} from '../../lib/index.js';
import { now, runWorker, SOAK, type Route, type WebLog, type WorkerConfig } from './config.js';

const config = JSON.parse(process.argv[2]!) as WorkerConfig;
const log: WebLog = {
  name: config.name,
  grants: { hot: [], sliding: [], cold: [], funnel: [] },
  answers: [],
  slots: [],
  enqueued: [],
  uncertain: [],
  counters: undefined as unknown as WebLog['counters'],
  clientErrors: 0,
};

// the little of Express' request and response the worker uses (no @types/express here)
interface Timed {
  method: string;
  path: string;
  params: Record<string, string>;
  soakStart?: number;
}
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

  @Post('orders/:owner')
  @MaxPending(SOAK.pending.max, { name: SOAK.pending.name, ttlMs: SOAK.pending.ttlMs, owner: param('owner'), failMode: 'closed' })
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
  imports: [RedisLimitModule.forRoot({ redis: config.redisUrl, keyPrefix: SOAK.keyPrefix, commandTimeoutMs: SOAK.commandTimeoutMs })],
  controllers: [SoakController],
})
class SoakModule {}

async function main(): Promise<() => Promise<string>> {
  const app = await NestFactory.create(SoakModule, { logger: ['error', 'warn'] });
  app.use((req: Timed, res: Response, next: () => void) => {
    req.soakStart = now();
    res.on('finish', () => {
      // GET /hot, /sliding, /cold/:k, /funnel: the route is the first segment
      const route = (req.method === 'POST' ? 'order' : req.method === 'DELETE' ? 'pay' : req.path.split('/')[1]) as Route;
      const byFailMode = res.statusCode === 503 || res.locals['unchecked'] === true;
      log.answers.push([route, req.soakStart!, now(), res.statusCode, byFailMode ? 1 : 0]);
    });
    next();
  });
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as { port: number }).port;
  const base = `http://127.0.0.1:${port}`;
  const queue = app.get(DelayQueueService);
  const events = app.get(RedisLimitEvents);

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
    if (r < 0.3) return call('GET', '/hot');
    if (r < 0.5) return call('GET', '/sliding');
    if (r < 0.7) return call('GET', `/cold/k${Math.floor(Math.random() * SOAK.cold.keys)}`);
    if (r < 0.8) return call('GET', '/funnel');
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

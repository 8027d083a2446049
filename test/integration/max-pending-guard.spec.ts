import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { jest } from '@jest/globals';
import {
  BadRequestException,
  ConflictException,
  Controller,
  ForbiddenException,
  Get,
  Injectable,
  Logger,
  Post,
  Query,
  UnprocessableEntityException,
  UseGuards,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { throwError, type Observable } from 'rxjs';
import { ExpiringHashService, MaxPending, PendingSlot } from '../../lib/index.js';
import { controllerApp, statusesOf, type ControllerApp } from '../harness/controller-app.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { eventually } from '../harness/expiring-hash.js';
import { itOnAServer } from '../harness/on-a-server.js';
import { TestRedis } from '../harness/redis-server.js';

// How MaxPendingGuard and its interceptor act on a request: class vs handler, shared names,
// releasing the slot when the handler throws or a later guard refuses, failMode, mistakes.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ownerHeader = (ctx: ExecutionContext) => ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-owner']!;
const cap = (name: string, extra: object = {}) => ({ name, ttlMs: 60_000, owner: ownerHeader, ...extra });

// set by a test: runs inside the handler of /failing/outage before it throws
let beforeThrowing: () => Promise<void> = async () => undefined;

@Injectable()
class DenyGuard implements CanActivate {
  canActivate(): boolean {
    throw new ForbiddenException();
  }
}

@Controller('drafts')
@MaxPending(1, cap('drafts'))
class DraftsController {
  @Post('inherited')
  inherited(@PendingSlot() id: string) {
    return { id };
  }

  @Post('own')
  @MaxPending(2, cap('own-drafts'))
  own(@PendingSlot() id: string) {
    return { id };
  }
}

@Controller('tickets')
class TicketsController {
  @Post('web')
  @MaxPending(2, cap('tickets'))
  web(@PendingSlot() id: string) {
    return { id };
  }

  @Post('app')
  @MaxPending(2, cap('tickets'))
  app(@PendingSlot() id: string) {
    return { id };
  }
}

@Controller('failing')
class FailingController {
  @Post('sync')
  @MaxPending(2, cap('sync'))
  sync(): never {
    throw new BadRequestException('thrown synchronously');
  }

  @Post('async')
  @MaxPending(2, cap('async'))
  async async(): Promise<never> {
    await sleep(1);
    throw new ConflictException('rejected');
  }

  @Post('observable')
  @MaxPending(2, cap('observable'))
  observable(): Observable<never> {
    return throwError(() => new UnprocessableEntityException('errored'));
  }

  @Post('outage')
  @MaxPending(2, cap('outage'))
  async outage(): Promise<never> {
    await beforeThrowing();
    throw new BadRequestException('failed while Redis went away');
  }

  // MaxPending's guard runs first (decorators apply bottom-up), then DenyGuard refuses
  @Post('denied')
  @UseGuards(DenyGuard)
  @MaxPending(2, cap('denied'))
  denied() {
    return 'never';
  }
}

@Controller('mistakes')
class MistakesController {
  @Post('empty-owner')
  @MaxPending(2, cap('empty-owner', { owner: () => '' }))
  emptyOwner() {
    return 'ok';
  }

  @Post('lone-surrogate-owner')
  @MaxPending(2, cap('lone-owner', { owner: () => 'u\uD800' }))
  loneSurrogateOwner() {
    return 'ok';
  }

  @Get('no-cap')
  noCap(@PendingSlot() id: string) {
    return { id };
  }

  @Post('open')
  @MaxPending(2, cap('open', { failMode: 'open' }))
  open(@PendingSlot() id: string, @Query('fail') fail?: string) {
    if (fail) throw new BadRequestException('failing on request');
    return { id };
  }

  @Post('closed')
  @MaxPending(2, cap('closed'))
  closed(@PendingSlot() id: string) {
    return { id };
  }
}

describe('@MaxPending guard and interceptor', () => {
  let redis: TestRedis;
  let app: ControllerApp;
  let hash: ExpiringHashService;
  const post = (path: string, owner = 'u1') => app.http.post(path).set('x-owner', owner);
  const statuses = (path: string, n: number, owner?: string) => statusesOf(() => post(path, owner), n);

  beforeAll(async () => {
    redis = await TestRedis.start({ own: true }); // one test stops it
  });
  afterAll(() => redis.stop());
  beforeEach(async () => {
    app = await controllerApp(redis, {
      controllers: [DraftsController, TicketsController, FailingController, MistakesController],
      providers: [DenyGuard],
      options: { keyPrefix: uniquePrefix('pending') },
    });
    hash = app.app.get(ExpiringHashService);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await app.close();
  });

  it('hands the handler the reserved slot id, a live field of `${name}:${owner}`', async () => {
    const response = await post('/tickets/web');
    expect(response.status).toBe(201);
    expect(response.body.id).toMatch(UUID);
    expect(await hash.get('tickets:u1', response.body.id)).toBe('');
    expect(await hash.ttl('tickets:u1', response.body.id)).toBeGreaterThan(59_000);
  });

  it("a controller's cap covers its handlers; a handler's own cap replaces it, reserving one slot", async () => {
    expect(await statuses('/drafts/inherited', 2)).toEqual([201, 429]);
    expect((await post('/drafts/inherited')).headers['x-ratelimit-limit']).toBe('1');
    // the guard is attached by the class and by the handler: still one slot per request
    expect(await statuses('/drafts/own', 3)).toEqual([201, 201, 429]);
    expect((await post('/drafts/own')).headers['x-ratelimit-limit']).toBe('2');
    expect(await hash.count('own-drafts:u1')).toBe(2);
    expect(await hash.count('drafts:u1')).toBe(1);
  });

  it('caps sharing a name share one hash across routes, per owner', async () => {
    expect(await statuses('/tickets/web', 1)).toEqual([201]);
    expect(await statuses('/tickets/app', 2)).toEqual([201, 429]);
    expect(await statuses('/tickets/web', 1)).toEqual([429]);
    expect(await statuses('/tickets/app', 1, 'u2')).toEqual([201]);
  });

  it.each([
    ['throws synchronously', 'sync', 400],
    ['rejects', 'async', 409],
    ['returns an errored Observable', 'observable', 422],
  ])('releases the slot when the handler %s, and answers with its error', async (_case, name, status) => {
    const first = await post(`/failing/${name}`);
    expect(first.status).toBe(status);
    // reserved before the handler ran, released before the error was answered
    expect(first.headers['x-ratelimit-remaining']).toBe('1');
    expect(await hash.count(`${name}:u1`)).toBe(0);
    expect(await statuses(`/failing/${name}`, 3)).toEqual([status, status, status]);
    expect(await hash.count(`${name}:u1`)).toBe(0);
  });

  itOnAServer("answers with the handler's error, and logs, when the slot cannot be released", async () => {
    const errors = jest.spyOn(Logger.prototype, 'error');
    beforeThrowing = () => redis.stop();
    try {
      const response = await post('/failing/outage');
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ message: 'failed while Redis went away' });
    } finally {
      beforeThrowing = async () => undefined;
      await redis.resume();
    }
    expect(errors).toHaveBeenCalledWith(expect.stringMatching(/^FailingController\.outage: could not release slot [0-9a-f-]{36} of 'outage:u1'/));
  });

  it('releases the slot when a guard after it refuses the request', async () => {
    const denied = await post('/failing/denied');
    expect(denied.status).toBe(403);
    expect(denied.headers['x-ratelimit-remaining']).toBe('1'); // the slot was reserved
    // released once the response is done: poll rather than race it (a loaded machine may take seconds)
    let count = -1;
    for (const deadline = Date.now() + 20_000; count !== 0 && Date.now() < deadline; await sleep(10)) {
      count = await hash.count('denied:u1');
    }
    expect(count).toBe(0);
  });

  it('an owner that resolves to an empty string or a lone surrogate, and @PendingSlot without @MaxPending, are 500s', async () => {
    expect((await post('/mistakes/empty-owner')).status).toBe(500);
    expect(await hash.count('empty-owner:')).toBe(0);
    // it would reach the sweep registry as U+FFFD and never be swept
    expect((await post('/mistakes/lone-surrogate-owner')).status).toBe(500);
    expect(await hash.count('lone-owner:u')).toBe(0);
    expect((await app.http.get('/mistakes/no-cap')).status).toBe(500);
  });

  itOnAServer("applies failMode when Redis is down: 'closed' answers 503, 'open' hands out an unreserved id", async () => {
    const del = jest.spyOn(hash, 'delete');
    await redis.stop();
    try {
      const closed = await post('/mistakes/closed');
      expect(closed.status).toBe(503);
      expect(closed.body).toEqual({ statusCode: 503, message: expect.any(String) });

      const open = await post('/mistakes/open');
      expect(open.status).toBe(201);
      expect(open.body.id).toMatch(UUID);
      expect(open.headers['x-ratelimit-limit']).toBeUndefined();

      // the handler fails, but there is no slot to release
      expect((await post('/mistakes/open?fail=1')).status).toBe(400);
      expect(del).not.toHaveBeenCalled();
    } finally {
      await redis.resume();
    }
    // the same application reserves again once Redis is back (its first call met the outage)
    await eventually(async () => (await post('/mistakes/closed')).status === 201);
  });
});

import 'reflect-metadata';
import { BadRequestException, Controller, Get, Post, type ExecutionContext } from '@nestjs/common';
import { MaxPending, RateLimit } from '../../lib/index.js';
import { statusesOf, type ControllerApp } from '../harness/controller-app.js';
import { withLoggedApp, type ErrorLog } from '../harness/logged-app.js';

// A `key`, `cost` or `owner` function that throws an HttpException answers with it; any other
// throw or an invalid result is a 500, logged at most once a minute per route (a client must not
// be able to flood the logs), and once per request however many limits are stacked.
const body = (ctx: ExecutionContext) => ctx.switchToHttp().getRequest<{ body?: { symbols?: string[] } }>().body ?? {};
const header = (ctx: ExecutionContext) => ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-owner'];
const fails = (): never => {
  throw new Error('resolver crashed');
};

@Controller('quotes')
class QuotesController {
  // the README's first version: a body without `symbols` is a TypeError
  @Post('bulk')
  @RateLimit({ limit: 100, windowMs: 60_000, cost: (ctx) => body(ctx).symbols!.length })
  bulk() {
    return 'ok';
  }

  @Post('checked')
  @RateLimit({
    limit: 100,
    windowMs: 60_000,
    cost: (ctx) => {
      const { symbols } = body(ctx);
      if (!Array.isArray(symbols)) throw new BadRequestException('symbols is required');
      return symbols.length;
    },
  })
  checked() {
    return 'ok';
  }

  @Get('empty-keys')
  @RateLimit({ limit: 5, windowMs: 1000, key: () => '' })
  @RateLimit({ limit: 50, windowMs: 60_000, key: () => '' })
  emptyKeys() {
    return 'ok';
  }

  @Get('throwing-keys')
  @RateLimit({ limit: 5, windowMs: 1000, key: fails })
  @RateLimit({ limit: 50, windowMs: 60_000, key: fails })
  throwingKeys() {
    return 'ok';
  }
}

@Controller('orders')
class OrdersController {
  @Post('crashing')
  @MaxPending(2, { name: 'crashing', ttlMs: 60_000, owner: fails })
  crashing() {
    return 'ok';
  }

  @Post('checked')
  @MaxPending(2, {
    name: 'checked',
    ttlMs: 60_000,
    owner: (ctx) => {
      const owner = header(ctx);
      if (!owner) throw new BadRequestException('x-owner header required');
      return owner;
    },
  })
  checked() {
    return 'ok';
  }
}

describe('user functions that fail', () => {
  const context = withLoggedApp({ controllers: [QuotesController, OrdersController] });
  let app: ControllerApp;
  let log: ErrorLog;
  beforeEach(() => {
    ({ app, log } = context);
  });

  it('a cost that throws a TypeError is a 500, logged once per route however many requests fail', async () => {
    expect(await statusesOf(() => app.http.post('/quotes/bulk').send({}), 3)).toEqual([500, 500, 500]);
    expect(log.errors).toEqual([expect.stringMatching(/^QuotesController\.bulk: cost threw TypeError/)]);
    // another route logs its own failure
    expect(await statusesOf(() => app.http.post('/orders/crashing'), 2)).toEqual([500, 500]);
    expect(log.errors).toHaveLength(2);
    expect(log.errors[1]).toMatch(/^OrdersController\.crashing: owner threw Error: resolver crashed/);
  });

  it('an HttpException from cost or owner answers as itself, unlogged', async () => {
    const cost = await app.http.post('/quotes/checked').send({});
    expect(cost.status).toBe(400);
    expect(cost.body).toMatchObject({ statusCode: 400, message: 'symbols is required' });
    const owner = await app.http.post('/orders/checked');
    expect(owner.status).toBe(400);
    expect(owner.body).toMatchObject({ statusCode: 400, message: 'x-owner header required' });
    expect((await app.http.post('/quotes/checked').send({ symbols: ['A', 'B'] })).headers['x-ratelimit-remaining']).toBe('98');
    expect(log.errors).toEqual([]);
  });

  it.each([
    ['resolve to nothing', '/quotes/empty-keys', /^QuotesController\.emptyKeys: key resolved to "", not a non-empty string$/],
    ['throw', '/quotes/throwing-keys', /^QuotesController\.throwingKeys: key threw Error: resolver crashed/],
  ])('stacked limits whose keys %s log once, not once per limit', async (_case, path, line) => {
    expect(await statusesOf(() => app.http.get(path), 3)).toEqual([500, 500, 500]);
    expect(log.errors).toEqual([expect.stringMatching(line)]);
  });
});

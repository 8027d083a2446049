import 'reflect-metadata';
import { Controller, Get, Post, type Type } from '@nestjs/common';
import { MaxPending, type MaxPendingOptions } from '../../lib/index.js';
import { startupError } from '../harness/controller-app.js';
import { TestRedis } from '../harness/redis-server.js';

// Bad @MaxPending options stop the application at app.init(), naming Controller.handler and the
// argument; RangeError for a number out of range, TypeError for a value of the wrong type.
const GOOD: MaxPendingOptions = { name: 'unpaid-orders', ttlMs: 60_000 };

describe('@MaxPending options are checked at app.init()', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());

  const init = (controller: Type) => startupError(redis, controller);

  function orders(max: unknown, options: unknown): Type {
    @Controller('orders')
    class OrdersController {
      @Post()
      @MaxPending(max as number, options as MaxPendingOptions)
      create() {
        return 'ok';
      }
    }
    return OrdersController;
  }

  it.each([
    ['max 0', 0, GOOD, /OrdersController\.create: @MaxPending\(max\) must be a positive integer, got 0/],
    ['max -1', -1, GOOD, /OrdersController\.create: @MaxPending\(max\) must be a positive integer, got -1/],
    ['a fractional max', 2.5, GOOD, /OrdersController\.create: @MaxPending\(max\) must be a positive integer, got 2\.5/],
    ['max NaN', NaN, GOOD, /OrdersController\.create: @MaxPending\(max\) must be a positive integer, got NaN/],
    ['max above 2^53', 2 ** 53, GOOD, /OrdersController\.create: @MaxPending\(max\) must be a positive integer/],
    ['ttlMs 0', 3, { ...GOOD, ttlMs: 0 }, /OrdersController\.create: @MaxPending\.ttlMs must be a positive integer, got 0/],
    ['ttlMs -5', 3, { ...GOOD, ttlMs: -5 }, /OrdersController\.create: @MaxPending\.ttlMs must be a positive integer, got -5/],
    ['ttlMs Infinity', 3, { ...GOOD, ttlMs: Infinity }, /OrdersController\.create: @MaxPending\.ttlMs must be a positive integer, got Infinity/],
    ['a fractional ttlMs', 3, { ...GOOD, ttlMs: 0.5 }, /OrdersController\.create: @MaxPending\.ttlMs must be a positive integer, got 0\.5/],
    // an expiry past 2^46 - 1 ms, which Redis refuses for a hash field (issue 13 #7)
    [
      'ttlMs 2^48',
      3,
      { ...GOOD, ttlMs: 2 ** 48 },
      /OrdersController\.create: @MaxPending\.ttlMs must be at most \d+ ms: now \+ @MaxPending\.ttlMs must not pass 70368744177663 ms/,
    ],
  ])('%s is a RangeError', async (_case, max, options, message) => {
    const error = await init(orders(max, options));
    expect(error).toBeInstanceOf(RangeError);
    expect((error as Error).message).toMatch(message);
  });

  it.each([
    ['max as a string', '3', GOOD, /OrdersController\.create: @MaxPending\(max\) must be a positive integer, got "3"/],
    ['no options', 3, undefined, /OrdersController\.create: @MaxPending\(max, options\) takes an options object/],
    ['options null', 3, null, /OrdersController\.create: @MaxPending\(max, options\) takes an options object/],
    ['no ttlMs', 3, { name: 'unpaid-orders' }, /OrdersController\.create: @MaxPending\.ttlMs must be a positive integer, got undefined/],
    ['ttlMs as a string', 3, { ...GOOD, ttlMs: '60000' }, /OrdersController\.create: @MaxPending\.ttlMs must be a positive integer, got "60000"/],
    ['no name', 3, { ttlMs: 60_000 }, /OrdersController\.create: @MaxPending\.name must be a non-empty string, got undefined/],
    ['an empty name', 3, { ...GOOD, name: '' }, /OrdersController\.create: @MaxPending\.name must be a non-empty string, got ""/],
    ['a name that is not a string', 3, { ...GOOD, name: 7 }, /OrdersController\.create: @MaxPending\.name must be a non-empty string, got 7/],
    ['a name with a colon', 3, { ...GOOD, name: 'orders:unpaid' }, /OrdersController\.create: @MaxPending\.name must not contain ':'/],
    ['an owner that is not a function', 3, { ...GOOD, owner: 'x-user-id' }, /OrdersController\.create: @MaxPending\.owner must be a function/],
    ['an unknown failMode', 3, { ...GOOD, failMode: 'maybe' }, /OrdersController\.create: @MaxPending\.failMode must be 'closed' or 'open', got maybe/],
    ['an empty notify', 3, { ...GOOD, notify: '' }, /OrdersController\.create: @MaxPending\.notify must be a non-empty string/],
    ['a notify that is not a string', 3, { ...GOOD, notify: 42 }, /OrdersController\.create: @MaxPending\.notify must be a non-empty string.*got 42/],
  ])('%s is a TypeError', async (_case, max, options, message) => {
    const error = await init(orders(max, options));
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(message);
  });

  it('reports every bad handler in one error', async () => {
    @Controller()
    class TwoBadController {
      @Get('a')
      @MaxPending(0, GOOD)
      first() {
        return 'a';
      }

      @Get('b')
      @MaxPending(3, { ...GOOD, ttlMs: undefined as never })
      second() {
        return 'b';
      }
    }
    const error = await init(TwoBadController);
    // one number out of range and one missing value: not all range problems
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/TwoBadController\.first: @MaxPending\(max\)/);
    expect((error as Error).message).toMatch(/TwoBadController\.second: @MaxPending\.ttlMs/);
  });

  it('a class-level cap is checked for each handler it covers', async () => {
    @Controller()
    @MaxPending(3, { ...GOOD, ttlMs: -1 })
    class ClassLevelController {
      @Get('a')
      first() {
        return 'a';
      }
    }
    const error = await init(ClassLevelController);
    expect(error).toBeInstanceOf(RangeError);
    expect((error as Error).message).toMatch(/ClassLevelController\.first: @MaxPending\.ttlMs/);
  });

  it('two caps on one handler are refused', async () => {
    @Controller()
    class TwiceController {
      @Post()
      @MaxPending(3, GOOD)
      @MaxPending(5, { ...GOOD, name: 'drafts' })
      create() {
        return 'ok';
      }
    }
    const error = await init(TwiceController);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/TwiceController\.create: @MaxPending is declared more than once/);
  });

  it('good options start, on a handler and on a controller', async () => {
    @Controller()
    @MaxPending(10, { name: 'drafts', ttlMs: 1, failMode: 'open' })
    class GoodController {
      @Post('orders')
      @MaxPending(3, { ...GOOD, owner: () => 'user', failMode: 'closed', notify: 'orders-expired' })
      create() {
        return 'ok';
      }

      @Post('drafts')
      draft() {
        return 'ok';
      }
    }
    expect(await init(GoodController)).toBeUndefined();
  });
});

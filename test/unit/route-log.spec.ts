import { BadRequestException, InternalServerErrorException } from '@nestjs/common';
import { RouteLog } from '../../lib/rate-limit/route-log.js';
import { UserFunctionError } from '../../lib/rate-limit/user-functions.js';

// A route's request-time programming errors reach the log at most once a minute.
describe('RouteLog', () => {
  let now: number;
  let lines: unknown[][];
  let log: RouteLog;
  beforeEach(() => {
    now = 1_000;
    lines = [];
    log = new RouteLog({ error: (...args: unknown[]) => void lines.push(args) }, 60_000, () => now);
  });

  it('logs a route once per interval, each route apart', () => {
    log.error('A.list', 'key threw');
    now += 59_999;
    log.error('A.list', 'key threw');
    log.error('B.list', 'cost threw');
    expect(lines).toEqual([['A.list: key threw'], ['B.list: cost threw']]);
    now += 1;
    log.error('A.list', 'key threw again');
    expect(lines).toHaveLength(3);
    expect(lines[2]).toEqual(['A.list: key threw again']);
  });

  it('a user function failure is a logged 500, with the cause as the stack; an HttpException answers as it is', () => {
    const cause = new TypeError("Cannot read properties of undefined (reading 'length')");
    expect(log.failure('Q.bulk', new UserFunctionError('cost threw TypeError', { cause }))).toBeInstanceOf(InternalServerErrorException);
    expect(lines).toEqual([['Q.bulk: cost threw TypeError', cause.stack]]);
    const refusal = new BadRequestException('symbols is required');
    expect(log.failure('Q.bulk', refusal)).toBe(refusal);
    expect(lines).toHaveLength(1);
  });
});

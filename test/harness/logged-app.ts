import type { LoggerService } from '@nestjs/common';
import { controllerApp, type ControllerApp, type ControllerAppSetup } from './controller-app.js';
import { TestRedis } from './redis-server.js';

/** Keeps the messages Nest logs at error level (without their stack and context). */
export class ErrorLog implements LoggerService {
  readonly errors: string[] = [];
  error(message: unknown): void {
    this.errors.push(String(message));
  }
  log(): void {}
  warn(): void {}
  debug(): void {}
  verbose(): void {}
  fatal(message: unknown): void {
    this.error(message);
  }
}

/**
 * For a describe block: one redis-server for the block, and for each test a fresh app of `setup`
 * (own key prefix) whose error-level log lines are kept. Read the fields inside tests.
 */
export function withLoggedApp(setup: Omit<ControllerAppSetup, 'logger'>) {
  const context = {} as { redis: TestRedis; app: ControllerApp; log: ErrorLog };
  beforeAll(async () => {
    context.redis = await TestRedis.start();
  });
  afterAll(() => context.redis.stop());
  beforeEach(async () => {
    context.log = new ErrorLog();
    context.app = await controllerApp(context.redis, { ...setup, logger: context.log });
  });
  afterEach(() => context.app.close());
  return context;
}

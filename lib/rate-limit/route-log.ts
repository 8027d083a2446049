import { InternalServerErrorException, type Logger } from '@nestjs/common';
import { UserFunctionError } from './user-functions.js';

/**
 * A guard's log of the programming errors its routes meet at request time. A client can make
 * them happen on every request (a body the `cost` function does not expect), so each route logs
 * at most once per `intervalMs`.
 */
export class RouteLog {
  private readonly lastLogged = new Map<string, number>();

  constructor(
    private readonly logger: Pick<Logger, 'error'>,
    private readonly intervalMs = 60_000,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Logs `route: message` unless this route logged less than `intervalMs` ago. */
  error(route: string, message: string, stack?: string): void {
    const now = this.now();
    const last = this.lastLogged.get(route);
    if (last !== undefined && now - last < this.intervalMs) return;
    this.lastLogged.set(route, now);
    if (stack === undefined) this.logger.error(`${route}: ${message}`);
    else this.logger.error(`${route}: ${message}`, stack);
  }

  /**
   * What a request gets when a user function failed: a UserFunctionError is a 500, logged here;
   * anything else (an HttpException the function threw) is answered as it is.
   */
  failure(route: string, error: unknown): unknown {
    if (!(error instanceof UserFunctionError)) return error;
    this.error(route, error.message, error.cause instanceof Error ? error.cause.stack : undefined);
    return new InternalServerErrorException();
  }
}

import { Inject, Injectable, Logger, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { defer, finalize, from, switchMap, type Observable } from 'rxjs';
import { ConcurrencySlots, isRefusal, type HeldSlot } from '../rate-limit/concurrency-slots.js';
import { RouteLog } from '../rate-limit/route-log.js';
import { resolveKey } from '../rate-limit/user-functions.js';
import { RedisConnection } from '../redis/redis-connection.js';
import { retryAfterSeconds } from '../transports/headers.js';
import { isClosed, whenClosed } from '../transports/response-close.js';
import { applyFailMode } from '../transports/responses.js';
import { defaultKey, transportOf, userFailure, type TransportAdapter } from '../transports/transport.adapter.js';
import { MaxConcurrentPlans, type MaxConcurrentPlan } from './max-concurrent.plans.js';

/**
 * Applies a handler's `@MaxConcurrent`: an interceptor, so it runs after every guard (a request
 * the rate limits refuse takes no slot), takes a slot of the request's key or refuses the request,
 * and gives the slot back when the request ends, whatever its outcome: the end of the handler's
 * Observable (a GraphQL field, a WebSocket or microservice message), and on HTTP its response's
 * 'close' too (finished, or its connection gone), whichever comes last.
 */
@Injectable()
export class MaxConcurrentInterceptor implements NestInterceptor {
  private readonly logger = new Logger('MaxConcurrentInterceptor');
  private readonly log = new RouteLog(this.logger);

  constructor(
    @Inject(MaxConcurrentPlans) private readonly plans: MaxConcurrentPlans,
    @Inject(ConcurrencySlots) private readonly slots: ConcurrencySlots,
    @Inject(RedisConnection) private readonly redis: RedisConnection,
  ) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const transport = transportOf(ctx);
    if (transport === undefined) return next.handle();
    const plan = this.plans.forRoute(ctx.getClass(), ctx.getHandler());
    if (plan === null) return next.handle();
    return from(this.take(ctx, transport, plan)).pipe(
      switchMap((slot) => {
        // under failMode 'open' Redis could not say: the request goes on without a slot
        if (slot === undefined) return next.handle();
        let released = false;
        const release = () => {
          if (released) return;
          released = true;
          slot.release().catch((error: unknown) => {
            this.logger.error(`${plan.route}: could not give a concurrency slot back (it comes back when its lease ends): ${(error as Error).message}`);
          });
        };
        const handled = defer(() => next.handle());
        const { res } = transport.getRequestResponse(ctx);
        // HTTP: freed once the handler has ended and its response is done, whichever is last (a
        // streamed body outlives the handler; a client that leaves does not end the work)
        if (ctx.getType() === 'http' && !isClosed(res)) {
          let ends = 2;
          const ended = () => {
            if (--ends === 0) release();
          };
          if (whenClosed(res, ended)) return handled.pipe(finalize(ended));
        }
        return handled.pipe(finalize(release));
      }),
    );
  }

  /** The request's slot; undefined under failMode 'open' when Redis could not say. Throws the
   * refusal, the outage (failMode 'closed') or a key function's failure as the transport says them. */
  private async take(ctx: ExecutionContext, transport: TransportAdapter, plan: MaxConcurrentPlan): Promise<HeldSlot | undefined> {
    try {
      let key: string;
      try {
        key = await resolveKey('key', plan.key ?? ((c) => defaultKey(c, this.redis.options)), ctx);
      } catch (error) {
        throw userFailure(transport, this.log.failure(plan.route, error));
      }
      let result;
      try {
        const of = plan.name === undefined ? { route: plan.route, scope: plan.scope } : { route: plan.route, name: plan.name };
        result = await this.slots.acquire(key, of, plan.limit, plan.leaseMs);
      } catch (error) {
        applyFailMode(error, plan.failMode, this.redis, plan.route, () => transport.unavailable());
        return undefined;
      }
      this.redis.reportSuccess();
      if (!isRefusal(result)) return result;
      transport.setHeaders(transport.getRequestResponse(ctx).res, { 'Retry-After': retryAfterSeconds(result.retryAfterMs) });
      throw transport.tooManyRequests(result.retryAfterMs);
    } catch (error) {
      // a socket.io message's acknowledgement, if it has one, gets the refusal too
      transport.acknowledge?.(ctx, error);
      throw error;
    }
  }
}

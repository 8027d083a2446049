import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { defer, tap, type Observable } from 'rxjs';
import { handlerOutcome, judgeOutcome, pendingOutcome } from './outcome.js';
import { transportOf } from '../transports/transport.adapter.js';

/**
 * Sees how a handler the guard granted with `countIf` limits ends. HTTP: it only notes what the
 * handler threw; the status sent decides, when the response is done. GraphQL, WebSocket and
 * microservice handlers: the handler's end is the outcome (see handlerOutcome); a request a later
 * guard refuses never gets here, and stays counted. A handler returning an Observable ends when
 * it completes, errors or is unsubscribed. The module registers it app-wide
 * (APP_INTERCEPTOR), so it also serves defaultLimits; a request without such limits passes
 * through after one lookup.
 */
@Injectable()
export class OutcomeInterceptor implements NestInterceptor {
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const transport = transportOf(ctx);
    const outcome = transport === undefined ? undefined : pendingOutcome(transport.getRequestResponse(ctx).req);
    if (outcome === undefined) return next.handle();
    let threw = false;
    // defer: a handler that throws synchronously errors the Observable like an async one
    return defer(() => next.handle()).pipe(
      tap({
        error: (error: unknown) => {
          threw = true;
          outcome.error = error;
        },
        finalize: () => {
          if (outcome.byHandler) void judgeOutcome(outcome, handlerOutcome(outcome.error, threw));
        },
      }),
    );
  }
}

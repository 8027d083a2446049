import { HttpException, type ExecutionContext } from '@nestjs/common';
import type { CountIf, RequestOutcome } from './rate-limit.metadata.js';
import type { CheckedLimit } from './checked-limit.js';
import type { DecisionEngine } from './decision-engine.js';
import type { StackDecision } from './decision.types.js';
import type { RouteLog } from './route-log.js';

/** A granted limit whose charge waits on the request's outcome. */
interface CountedLimit {
  limit: CheckedLimit;
  grantId: string;
  countIf: CountIf;
  /** How errors name it, e.g. `@RateLimit(#1)`. */
  at: string;
}

/** A request's limits with countIf, until its outcome is known; judged once. */
interface PendingOutcome {
  ctx: ExecutionContext;
  route: string;
  limits: CountedLimit[];
  refund: (limit: CheckedLimit, grantId: string) => Promise<number>;
  log: RouteLog;
  /** What the handler threw, seen by OutcomeInterceptor. */
  error?: unknown;
  /** Judged by OutcomeInterceptor at the handler's end: no response to watch. */
  byHandler: boolean;
  /** Its countIfs have been asked (judgeOutcome runs once). */
  judged: boolean;
}

// by the request as the guard remembers it (GraphQL: the field resolution's `info`; WebSocket and
// RPC: the handler's argument array, which the interceptors get too)
const pending = new WeakMap<object, PendingOutcome>();

/** What the guard hands over after a decision. */
export interface Decided {
  ctx: ExecutionContext;
  route: string;
  req: object;
  res: unknown;
  stack: CheckedLimit[];
  limits: readonly { countIf: CountIf | undefined; blockMs: number | undefined; at: string }[];
  result: StackDecision;
  /** Decided in process memory (failMode 'local'): Redis is not answering, so no lockout starts
   * (lockouts live in Redis) and there are no grants to give back (the local charge stands). */
  local?: boolean;
}

/**
 * What a decision leaves to do once it is made: a refusal by a limit with `blockMs` blocks its key
 * (a lockout; awaited, so the next request meets it), and a grant by limits with `countIf` waits
 * for the request's outcome. Only a refusal by the counter starts a lockout: Redis says which
 * refusals a block in force made (`lockedOut`), whichever instance started it, and a refusal from
 * the refusal cache repeats one whose lockout began already. So a lockout begins once and ends
 * `blockMs` later however often the key knocks, on any number of instances.
 * Redis failures here are logged, never answered: the charge (or the missing block) stands.
 */
export class Outcomes {
  constructor(
    /** Where blocks and refunds go: the guard's limits are checked already. */
    private readonly engine: Pick<DecisionEngine, 'block' | 'refund'>,
    private readonly log: RouteLog,
  ) {}

  async after(decided: Decided): Promise<void> {
    const { stack, limits, result } = decided;
    const mayBlock = decided.local !== true && result.cached !== true;
    // most routes have neither option: one pass, nothing allocated
    let blocks: Promise<void>[] | undefined;
    let counted: CountedLimit[] | undefined;
    for (let i = 0; i < limits.length; i++) {
      const { countIf, blockMs, at } = limits[i]!;
      const decision = result.decisions[i]!;
      if (blockMs !== undefined && !decision.allowed && mayBlock && result.lockedOut?.includes(i) !== true) {
        (blocks ??= []).push(this.block(decided, i, blockMs));
      }
      // a shadow limit that would have refused charged nothing: nothing to give back
      if (countIf !== undefined && decision.grantId !== undefined) (counted ??= []).push({ limit: stack[i]!, grantId: decision.grantId, countIf, at });
    }
    if (blocks !== undefined) await Promise.all(blocks);
    if (counted !== undefined) this.watch(decided, counted);
  }

  private async block({ route, stack, limits }: Decided, i: number, blockMs: number): Promise<void> {
    try {
      await this.engine.block(stack[i]!, blockMs);
    } catch (error) {
      this.log.error(route, `${limits[i]!.at}: could not block the key for blockMs ${blockMs}: ${(error as Error).message}`);
    }
  }

  /** HTTP: the outcome is the status sent, when the response is done. Elsewhere (or on an HTTP
   * response that is not Node's) it is the handler's, seen by OutcomeInterceptor. */
  private watch({ ctx, route, req, res }: Decided, limits: CountedLimit[]): void {
    const raw = ctx.getType() === 'http' ? rawResponse(res) : undefined;
    const refund = (limit: CheckedLimit, grantId: string) => this.engine.refund(limit, grantId, undefined);
    const outcome: PendingOutcome = { ctx, route, limits, refund, log: this.log, byHandler: raw === undefined, judged: false };
    pending.set(req, outcome);
    // 'close' follows 'finish'; without it the client went away mid-request, the handler may
    // still run, and there is no outcome to judge by: the charge stands
    raw?.once('close', () => void judgeOutcome(outcome, raw.writableFinished ? { statusCode: raw.statusCode, ...errorOf(outcome) } : undefined));
  }
}

interface RawResponse {
  once(event: 'close', listener: () => void): unknown;
  writableFinished: boolean;
  statusCode: number;
}

/** Express's response is Node's; Fastify's reply wraps it as `raw`. */
function rawResponse(res: unknown): RawResponse | undefined {
  const candidate = (res as { raw?: unknown } | undefined)?.raw ?? res;
  return typeof (candidate as Partial<RawResponse> | undefined)?.once === 'function' ? (candidate as RawResponse) : undefined;
}

const errorOf = (outcome: PendingOutcome) => ('error' in outcome ? { error: outcome.error } : {});

/** The pending outcome of a request the guard granted with countIf limits. */
export function pendingOutcome(req: object): PendingOutcome | undefined {
  return pending.get(req);
}

/**
 * Asks each countIf of a finished request, and gives back the grants of those that say false.
 * `outcome` undefined: none to judge by, every charge stands. A countIf that throws or answers
 * something else than a boolean is logged; its charge stands.
 */
export async function judgeOutcome(pending: PendingOutcome, outcome: RequestOutcome | undefined): Promise<void> {
  if (pending.judged) return;
  pending.judged = true;
  if (outcome === undefined) return;
  const refunds = pending.limits.map(async ({ limit, grantId, countIf, at }) => {
    let counts: unknown;
    try {
      counts = countIf(pending.ctx, outcome);
    } catch (error) {
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return pending.log.error(pending.route, `${at}.countIf threw ${reason}; the request stays counted`, (error as Error)?.stack);
    }
    if (counts === true) return;
    if (counts !== false) return pending.log.error(pending.route, `${at}.countIf returned ${typeof counts}, not a boolean; the request stays counted`);
    try {
      await pending.refund(limit, grantId);
    } catch (error) {
      pending.log.error(pending.route, `${at}: could not give back a request countIf did not count: ${(error as Error).message}`);
    }
  });
  await Promise.all(refunds);
}

/**
 * The outcome of a handler outside HTTP (GraphQL, WebSocket, microservices), where no status is
 * sent: 200 when it succeeded; when it threw, an HttpException's status, the `statusCode` of an
 * error object (WsException, RpcException), else 500.
 */
export function handlerOutcome(error: unknown, threw: boolean): RequestOutcome {
  if (!threw) return { statusCode: 200 };
  return { statusCode: statusOf(error), error };
}

function statusOf(error: unknown): number {
  if (error instanceof HttpException) return error.getStatus();
  const body = (error as { getError?: () => unknown } | null)?.getError?.();
  const statusCode = (body as { statusCode?: unknown } | null)?.statusCode;
  return typeof statusCode === 'number' && Number.isInteger(statusCode) ? statusCode : 500;
}

import type { RedisLimitEvents } from '../observability/redis-limit-events.js';
import type { DecideOptions, StackDecision } from './decision.types.js';
import type { RouteLog } from './route-log.js';

// the common answers, shared: nobody writes to them
const NONE: number[] = [];
const NO_OPTIONS = {};

/** A route's verdict when some of its limits are shadows. */
export interface ShadowedDecision extends StackDecision {
  /** Indexes of the shadow limits that refused while the request goes on (empty otherwise). */
  shadowRefused: number[];
}

/**
 * Decides a stack in which the limits flagged `shadow` never refuse. A shadow limit is decided
 * and charged with the others, as if enforced, in the same atomic call, so its counts are what
 * enforcing it would give. The stack is refused for real only when a limit that is not a shadow
 * refuses. When only shadows refuse, that call charged nothing (a stack is all or nothing): the
 * enforced limits are then decided again on their own, in a second atomic call whose verdict
 * stands, and the refusing shadows stay uncharged, as a refused request would have left them.
 */
export async function decideShadowed<L>(
  /** DecisionEngine, or failMode 'local''s in-process limiter: told which limits are shadows, and
   * when a stack is the enforced rest of one they alone refused (see DecideOptions) */
  limiter: { decide(stack: L[], options: Pick<DecideOptions, 'shadows' | 'shadowRefused'>): StackDecision | Promise<StackDecision> },
  stack: L[],
  limits: readonly { shadow: boolean }[],
): Promise<ShadowedDecision> {
  const shadows = shadowIndexes(limits);
  const first = await limiter.decide(stack, shadows.length === 0 ? NO_OPTIONS : { shadows });
  if (first.allowed) return { ...first, shadowRefused: NONE };
  const refusing = first.decisions.flatMap((decision, i) => (decision.allowed ? [] : [i]));
  if (refusing.some((i) => !limits[i]!.shadow)) {
    // the wait the request is told is its enforced limits', not a shadow's
    const retryAfterMs = Math.max(...refusing.map((i) => (limits[i]!.shadow ? 0 : first.decisions[i]!.retryAfterMs)));
    return { ...first, retryAfterMs, shadowRefused: NONE };
  }

  const enforced = stack.flatMap((_, i) => (limits[i]!.shadow ? [] : [i]));
  const decisions = [...first.decisions];
  if (enforced.length === 0) return { allowed: true, retryAfterMs: 0, decisions, shadowRefused: refusing };
  const second = await limiter.decide(
    enforced.map((i) => stack[i]!),
    { shadowRefused: true },
  );
  enforced.forEach((i, j) => {
    decisions[i] = second.decisions[j]!;
  });
  // the enforced limits refused on their own (a concurrent request took the last permit): that stands
  if (!second.allowed) {
    const refused: StackDecision = { allowed: false, retryAfterMs: second.retryAfterMs, decisions };
    if (second.lockedOut !== undefined) refused.lockedOut = second.lockedOut.map((j) => enforced[j]!);
    if (second.cached) refused.cached = true;
    return { ...refused, shadowRefused: NONE };
  }
  return { allowed: true, retryAfterMs: 0, decisions, shadowRefused: refusing };
}

// the common case, no shadows, allocates nothing per request
const shadowIndexCache = new WeakMap<readonly { shadow: boolean }[], number[]>();
function shadowIndexes(limits: readonly { shadow: boolean }[]): number[] {
  let indexes = shadowIndexCache.get(limits);
  if (indexes === undefined) shadowIndexCache.set(limits, (indexes = limits.flatMap((limit, i) => (limit.shadow ? [i] : []))));
  return indexes;
}

/**
 * Reports a request that shadow limits would have refused: counted and announced every time
 * (`redis-limit.shadow-refused`), logged at most once a minute per route by `log`. Nothing for
 * any other decision.
 */
export function reportShadowRefusal(
  events: RedisLimitEvents,
  log: RouteLog,
  route: string,
  stack: readonly { key: string; scope?: string | undefined }[],
  result: StackDecision & { shadowRefused?: number[] },
): void {
  const refused = result.shadowRefused;
  if (refused === undefined || refused.length === 0) return;
  const retryAfterMs = Math.max(...refused.map((i) => result.decisions[i]!.retryAfterMs));
  events.shadowRefused(route, retryAfterMs, () =>
    refused.map((i) => {
      const { key, scope } = stack[i]!;
      const { limit, remaining, retryAfterMs: wait } = result.decisions[i]!;
      return { key, ...(scope === undefined ? {} : { scope }), limit, remaining, retryAfterMs: wait };
    }),
  );
  log.error(route, `shadow limits would have refused this request (retry after ${retryAfterMs} ms); it goes on (logged at most once a minute per route)`);
}

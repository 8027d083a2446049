import type { StackDecision, StackedLimit } from '../../lib/index.js';
import { checkStackedLimit } from '../../lib/rate-limit/checked-limit.js';
import type { LocalLimiter } from '../../lib/rate-limit/local/local-limiter.js';

/** A LocalLimiter's decision on a stack written as RateLimiterService takes it, checked first as
 * the guard's plans are at start-up (the limiter itself takes checked limits only). */
export function decideStacked(local: LocalLimiter, stack: readonly StackedLimit[], now?: number): StackDecision {
  return local.decide(
    stack.map((limit) => checkStackedLimit(limit)),
    now,
  );
}

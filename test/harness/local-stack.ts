import type { StackDecision, StackedLimit } from '../../lib/index.js';
import { checkedLimit, checkTarget } from '../../lib/rate-limit/checked-limit.js';
import type { LocalLimiter } from '../../lib/rate-limit/local/local-limiter.js';

/**
 * A LocalLimiter's decision on a stack written as RateLimiterService takes it: each policy or
 * funnel checked as the plans check them at start-up (the limiter takes checked limits only), its
 * permits as given: the tests also ask for more than a limit, to see the local refusal of a request
 * for more than the divided limit.
 */
export function decideStacked(local: LocalLimiter, stack: readonly StackedLimit[], now?: number): StackDecision {
  const checked = stack.map((limit) => {
    const { key, scope, spec } = checkTarget(limit);
    return checkedLimit(key, scope, spec, limit.permits ?? 1);
  });
  return local.decide(checked, now);
}

/** How the rate limits counted a request they let through (`RedisLimitCounters.decisions`). */
export type CountedOutcome = 'allowed' | 'shadow-refused';

// by the request as the guards meet it: a later refusal of the same request (@MaxPending) says
// which count it turns into a refusal, so a chart counts each request once
const counted = new WeakMap<object, CountedOutcome>();

export function countRequest(req: object, outcome: CountedOutcome): void {
  counted.set(req, outcome);
}

/** How `req` was counted as it went through the rate limits; undefined when none decided it. */
export function countedAs(req: object): CountedOutcome | undefined {
  return counted.get(req);
}

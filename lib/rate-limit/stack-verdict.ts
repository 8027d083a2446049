import type { DecisionEvent } from '../observability/events.js';
import { RateLimitReply } from '../redis/replies.js';
import { clusterSlot } from '../redis/slot.js';
import type { CheckedLimit } from './checked-limit.js';
import type { DecidedStack } from './decision-batch.js';
import type { DecideOptions, StackDecision } from './decision.types.js';
import { grantText, isGranted } from './grant-text.js';
import { KIND_NAMES, type RateLimitDecision } from './policy.js';

// From decide.lua's replies to a stack's verdict, and how that verdict is reported: pure
// functions of what Redis said, kept apart from the engine that asks it.

/** One slot's verdicts: its limits' decisions and grant ids (decide.lua's reply). */
export interface ParsedGroup {
  allowed: boolean;
  limits: { index: number; decision: RateLimitDecision; grant: string; lockedOut: boolean }[];
}

/** The stack's limits grouped by cluster slot, in stack order (indexes into the stack). */
export function bySlot(keys: readonly string[]): number[][] {
  const groups = new Map<number, number[]>();
  keys.forEach((key, i) => {
    const slot = clusterSlot(key);
    const group = groups.get(slot);
    if (group === undefined) groups.set(slot, [i]);
    else group.push(i);
  });
  return [...groups.values()];
}

export function parseGroup(stack: DecidedStack, group: readonly number[], checked: readonly CheckedLimit[]): ParsedGroup {
  const limits = group.map((index, i) => {
    const reply = stack.limits[i]!;
    const limit = checked[index]!;
    const granted = isGranted(reply);
    const decision: RateLimitDecision = {
      allowed: granted,
      limit: limit.spec.limit,
      remaining: Math.max(0, reply.remaining),
      retryAfterMs: 'retryAfterMs' in reply ? reply.retryAfterMs : 0,
      resetMs: reply.resetMs,
    };
    const grant = grantText(limit, reply, stack.now);
    return { index, decision, grant, lockedOut: reply.verdict === RateLimitReply.BLOCKED };
  });
  return { allowed: stack.verdict === RateLimitReply.GRANTED, limits };
}

/** The stack's verdict from its slots' verdicts, decisions in stack order. */
export function stackOf(
  checked: readonly CheckedLimit[],
  groups: ParsedGroup[],
  sign: (index: number, grant: string) => string,
  allowed = groups[0]!.allowed,
): StackDecision {
  const decisions = new Array<RateLimitDecision>(checked.length);
  let lockedOut: number[] | undefined;
  let retryAfterMs = 0;
  for (const group of groups) {
    for (const { index, decision, grant, lockedOut: blocked } of group.limits) {
      // a refused stack charged nothing (what a slot charged was given back): no grant to name
      if (allowed && grant !== '') decision.grantId = sign(index, grant);
      if (blocked) (lockedOut ??= []).push(index);
      decisions[index] = decision;
      retryAfterMs = Math.max(retryAfterMs, decision.retryAfterMs);
    }
  }
  return lockedOut === undefined ? { allowed, retryAfterMs, decisions } : { allowed, retryAfterMs, decisions, lockedOut };
}

export type Outcome = 'allowed' | 'refused' | 'shadow-refused';

/**
 * How a decided stack is reported, and whether its refusal may be remembered. A shadow's refusal
 * is no refusal: never remembered (its wait is not the request's), and reported as
 * `shadow-refused` when shadows alone refused; where enforced limits remain those are decided
 * again (see decideShadowed), and that call reports the request (`outcome` undefined here).
 */
export function verdictOf(result: StackDecision, count: number, options: DecideOptions): { outcome: Outcome | undefined; cacheable: boolean } {
  if (result.allowed) return { outcome: options.shadowRefused === true ? 'shadow-refused' : 'allowed', cacheable: false };
  const shadows = options.shadows ?? [];
  // (most stacks have no shadow: a refusal is the request's, answered per request)
  if (shadows.length === 0 && result.decisions.some((decision) => !decision.allowed)) return { outcome: 'refused', cacheable: true };
  const refusing = result.decisions.flatMap((decision, i) => (decision.allowed ? [] : [i]));
  const byShadows = refusing.filter((i) => shadows.includes(i)).length;
  if (byShadows < refusing.length) return { outcome: 'refused', cacheable: byShadows === 0 };
  return { outcome: shadows.length < count ? undefined : 'shadow-refused', cacheable: false };
}

export function decisionEvent(result: StackDecision, checked: readonly CheckedLimit[], route: string | undefined, outcome?: Outcome): DecisionEvent {
  return {
    type: 'redis-limit.decision',
    ...(route === undefined ? {} : { route }),
    // a request shadow limits alone refused goes on
    allowed: result.allowed || outcome === 'shadow-refused',
    ...(outcome === 'shadow-refused' ? { shadowRefused: true as const } : {}),
    retryAfterMs: result.retryAfterMs,
    limits: checked.map(({ key, scope, spec }, i) => ({
      key,
      ...(scope === undefined ? {} : { scope }),
      kind: KIND_NAMES[spec.kind],
      limit: spec.limit,
      allowed: result.decisions[i]!.allowed,
      remaining: result.decisions[i]!.remaining,
    })),
  };
}

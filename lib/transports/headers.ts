import type { HeadersMode } from './guard.options.js';
import type { RateLimitDecision } from '../rate-limit/policy.js';

export interface HeaderPolicy {
  name: string;
  limit: number;
  windowMs: number;
}

const seconds = (ms: number) => Math.ceil(ms / 1000);
/** A wait in whole seconds: rounded up (never sooner than it ends), at least 1. */
const waitSeconds = (ms: number) => Math.max(1, seconds(ms));

/**
 * The rate-limit headers of one response. `legacy` and the draft's `RateLimit` describe one limit
 * of the stack (see `described`); `RateLimit-Policy` lists every policy of the stack
 * (IETF draft-ietf-httpapi-ratelimit-headers-11, structured-field lists).
 *
 * The draft's `t` is the effective window: the seconds within which no more than `r` is
 * available, and Retry-After should not point earlier. On a refusal that is the wait until the
 * request could be granted, which is Retry-After itself; otherwise the time until the limit is
 * full again (the decision carries no sooner moment; by then more quota is surely available).
 */
export function rateLimitHeaders(mode: HeadersMode, policies: readonly HeaderPolicy[], decisions: readonly RateLimitDecision[]): Record<string, string> {
  if (mode === false || decisions.length === 0) return {};
  const index = described(decisions);
  const decision = decisions[index]!;
  const headers: Record<string, string> = {};
  if (mode === 'legacy' || mode === 'both') {
    headers['X-RateLimit-Limit'] = String(decision.limit);
    headers['X-RateLimit-Remaining'] = String(decision.remaining);
    headers['X-RateLimit-Reset'] = String(seconds(decision.resetMs));
  }
  if (mode === 'draft' || mode === 'both') {
    headers['RateLimit-Policy'] = policies.map((p) => `${sfString(p.name)};q=${p.limit};w=${Math.max(1, seconds(p.windowMs))}`).join(', ');
    const t = decision.allowed ? seconds(decision.resetMs) : waitSeconds(decision.retryAfterMs);
    headers['RateLimit'] = `${sfString(policies[index]!.name)};r=${decision.remaining};t=${t}`;
  }
  return headers;
}

/** Retry-After: whole seconds, rounded up, at least 1. */
export function retryAfterSeconds(retryAfterMs: number): string {
  return String(waitSeconds(retryAfterMs));
}

/**
 * The decision the headers describe. Refused: the refusing limit with the longest wait, the one
 * Retry-After gives (a limit that would have granted says nothing about when to come back).
 * Granted: the tightest, with the fewest remaining. The first on ties.
 */
function described(decisions: readonly RateLimitDecision[]): number {
  const refused = decisions.some((d) => !d.allowed);
  let best = -1;
  decisions.forEach((d, i) => {
    if (refused && d.allowed) return;
    const current = decisions[best];
    if (current === undefined || (refused ? d.retryAfterMs > current.retryAfterMs : d.remaining < current.remaining)) best = i;
  });
  return best;
}

/** An RFC 8941 sf-string: printable ASCII only, with `"` and `\` escaped. */
function sfString(value: string): string {
  return `"${value.replace(/[^\x20-\x7e]/g, '?').replace(/["\\]/g, '\\$&')}"`;
}

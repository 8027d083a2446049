import type { HeadersMode } from '../redis-limit.options.js';
import type { RateLimitDecision } from './policy.js';

export interface HeaderPolicy {
  name: string;
  limit: number;
  windowMs: number;
}

const seconds = (ms: number) => Math.ceil(ms / 1000);

/**
 * The rate-limit headers of one response. `legacy` and the draft's `RateLimit` describe the
 * tightest limit (fewest remaining); `RateLimit-Policy` lists every policy of the stack
 * (IETF draft-ietf-httpapi-ratelimit-headers, structured-field lists).
 */
export function rateLimitHeaders(
  mode: HeadersMode,
  policies: readonly HeaderPolicy[],
  decisions: readonly RateLimitDecision[],
): Record<string, string> {
  if (mode === false || decisions.length === 0) return {};
  let tightest = 0;
  decisions.forEach((d, i) => {
    if (d.remaining < decisions[tightest]!.remaining) tightest = i;
  });
  const decision = decisions[tightest]!;
  const headers: Record<string, string> = {};
  if (mode === 'legacy' || mode === 'both') {
    headers['X-RateLimit-Limit'] = String(decision.limit);
    headers['X-RateLimit-Remaining'] = String(decision.remaining);
    headers['X-RateLimit-Reset'] = String(seconds(decision.resetMs));
  }
  if (mode === 'draft' || mode === 'both') {
    headers['RateLimit-Policy'] = policies
      .map((p) => `${sfString(p.name)};q=${p.limit};w=${Math.max(1, seconds(p.windowMs))}`)
      .join(', ');
    headers['RateLimit'] = `${sfString(policies[tightest]!.name)};r=${decision.remaining};t=${seconds(decision.resetMs)}`;
  }
  return headers;
}

/** Retry-After: whole seconds, rounded up, at least 1. */
export function retryAfterSeconds(retryAfterMs: number): string {
  return String(Math.max(1, seconds(retryAfterMs)));
}

/** An RFC 8941 sf-string: printable ASCII only, with `"` and `\` escaped. */
function sfString(value: string): string {
  return `"${value.replace(/[^\x20-\x7e]/g, '?').replace(/["\\]/g, '\\$&')}"`;
}

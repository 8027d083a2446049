import { RateLimitReply } from '../redis/replies.js';
import type { RateLimitDecideLimitReply, RateLimitDecideSpec } from '../redis/script-bindings.generated.js';

/** A limit's reply when decide.lua granted it, charged or not. */
export type GrantedReply = Extract<RateLimitDecideLimitReply, { verdict: typeof RateLimitReply.GRANTED | typeof RateLimitReply.CHARGED }>;

/** Whether decide.lua granted a limit (charged or not). */
export function isGranted(reply: RateLimitDecideLimitReply): reply is GrantedReply {
  return reply.verdict === RateLimitReply.GRANTED || reply.verdict === RateLimitReply.CHARGED;
}

/**
 * The grant id of a limit decide.lua charged ('' for any other reply), from the parts the script
 * replies: the counter's life (its µs and number), what refunds gave back in it, one number, the
 * call's clock (`now`) and the permits the limit charged. Each byte a script replies, and each string it builds, costs
 * Redis more than writing the id out here does. The ids are the ones refund.lua parses (see each
 * algorithm's commit): fixed windows '<life>[+<g>]:<c>:<permits>', token bucket
 * '<life>[+<g>]:<permits>:<ms>:<units left>', sliding window '<life>:<seq>' with the seq written
 * as a letter for its digit count, then its digits (it gives back nothing of a life: g is 0).
 */
export function grantText(limit: RateLimitDecideSpec, reply: RateLimitDecideLimitReply, now: number): string {
  if (reply.verdict !== RateLimitReply.CHARGED) return '';
  const life = `${reply.lifeAt}${reply.lifeNumber}`;
  const given = reply.given > 0 ? `+${reply.given}` : '';
  switch (limit.algorithm) {
    case 'sw': {
      const seq = String(reply.grant);
      return `${life}:${String.fromCharCode(96 + seq.length)}${seq}`;
    }
    case 'tb':
      return `${life}${given}:${limit.permits}:${now}:${reply.grant}`;
    case 'fw':
    case 'sc':
      return `${life}${given}:${reply.grant}:${limit.permits}`;
  }
}

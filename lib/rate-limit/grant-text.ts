import { RateLimitReply } from '../redis/replies.js';
import type { RateLimitDecideLimitReply, RateLimitDecideSpec } from '../redis/script-bindings.generated.js';

/** The block's mark a hash counter's life field may end with (see life.lua): no part of an id. */
const BLOCK_MARK = 33; // '!'

/** A limit's reply when decide.lua granted it (a token bucket that charged: its own row). */
export type GrantedReply = Extract<RateLimitDecideLimitReply, { verdict: typeof RateLimitReply.GRANTED | typeof RateLimitReply.BUCKET_GRANTED }>;

/** Whether decide.lua granted a limit (in either granted row). */
export function isGranted(reply: RateLimitDecideLimitReply): reply is GrantedReply {
  return reply.verdict === RateLimitReply.GRANTED || reply.verdict === RateLimitReply.BUCKET_GRANTED;
}

/**
 * The grant id of a limit decide.lua granted ('' when it charged nothing), from the parts the
 * script replies: the counter's life as stored, one number, the call's clock (`now`) and the
 * permits the limit charged. Each byte a script replies, and each string it builds, costs Redis
 * more than writing the id out here does. The ids are the ones refund.lua parses (see each
 * algorithm's commit): fixed windows '<life>[+<g>]:<c>:<permits>', token bucket
 * '<life>[+<g>]:<permits>:<ms>:<units left>' (its own reply row: the life and g as numbers),
 * sliding window '<life>:<seq>' with the seq written as a letter for its digit count, then its
 * digits.
 */
export function grantText(limit: RateLimitDecideSpec, reply: GrantedReply, now: number): string {
  // a token bucket's life, as numbers: its µs then its number, as life.lua writes a life
  if (reply.verdict === RateLimitReply.BUCKET_GRANTED)
    return `${reply.lifeAt}${reply.lifeNumber}${reply.given > 0 ? `+${reply.given}` : ''}:${limit.permits}:${now}:${reply.grant}`;
  const stored = reply.life;
  if (stored === '') return '';
  const life = stored.charCodeAt(stored.length - 1) === BLOCK_MARK ? stored.slice(0, -1) : stored;
  switch (limit.algorithm) {
    case 'sw': {
      const seq = String(reply.grant);
      return `${life}:${String.fromCharCode(96 + seq.length)}${seq}`;
    }
    case 'fw':
    case 'sc':
      return `${life}:${reply.grant}:${limit.permits}`;
    case 'tb':
      // a bucket's charge has its own row (above): this one charged nothing
      return '';
  }
}

import { RateLimitReply } from '../redis/replies.js';
import type { RateLimitDecideLimitReply, RateLimitDecideSpec } from '../redis/script-bindings.generated.js';

/** The block's mark a hash counter's life field may end with (see life.lua): no part of an id. */
const BLOCK_MARK = 33; // '!'

/** A limit's reply when decide.lua granted it (a token bucket that charged: its own row). */
export type GrantedReply = Extract<RateLimitDecideLimitReply, { verdict: typeof RateLimitReply.GRANTED | typeof RateLimitReply.GRANTED_AS_NUMBERS }>;

/** Whether decide.lua granted a limit (in either granted row). */
export function isGranted(reply: RateLimitDecideLimitReply): reply is GrantedReply {
  return reply.verdict === RateLimitReply.GRANTED || reply.verdict === RateLimitReply.GRANTED_AS_NUMBERS;
}

/**
 * The grant id of a limit decide.lua granted ('' when it charged nothing), from the parts the
 * script replies: the counter's life, one number, the call's clock (`now`) and the permits the
 * limit charged. Each byte a script replies, and each string it builds, costs Redis more than
 * writing the id out here does. The ids are the ones refund.lua parses (see each algorithm's
 * commit): fixed windows '<life>[+<g>]:<c>:<permits>', token bucket
 * '<life>[+<g>]:<permits>:<ms>:<units left>', sliding window '<life>:<seq>' with the seq written
 * as a letter for its digit count, then its digits. The last two keep their lives as numbers, and
 * their charges come in a row of their own (GRANTED_AS_NUMBERS).
 */
export function grantText(limit: RateLimitDecideSpec, reply: GrantedReply, now: number): string {
  if (reply.verdict === RateLimitReply.GRANTED_AS_NUMBERS) {
    // a life kept as numbers: its µs, then its number, as life.lua writes a life
    const life = `${reply.lifeAt}${reply.lifeNumber}`;
    if (limit.algorithm === 'sw') return swGrant(life, reply.grant);
    return `${life}${reply.given > 0 ? `+${reply.given}` : ''}:${limit.permits}:${now}:${reply.grant}`;
  }
  const stored = reply.life;
  if (stored === '') return '';
  const life = stored.charCodeAt(stored.length - 1) === BLOCK_MARK ? stored.slice(0, -1) : stored;
  switch (limit.algorithm) {
    case 'fw':
    case 'sc':
      return `${life}:${reply.grant}:${limit.permits}`;
    case 'sw':
    case 'tb':
      // their charges have their own row (above): this one charged nothing
      return '';
  }
}

/** A sliding window's grant: its seq written as a letter for its digit count, then its digits. */
function swGrant(life: string, seq: number): string {
  const digits = String(seq);
  return `${life}:${String.fromCharCode(96 + digits.length)}${digits}`;
}

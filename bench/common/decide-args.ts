import { RateLimitReply } from '../../lib/redis/replies.js';
import { grantText, isGranted } from '../../lib/rate-limit/grant-text.js';
import { SCRIPT_BINDINGS, type RateLimitDecideSpec } from '../../lib/redis/script-bindings.generated.js';

/**
 * decide.lua's ARGV layouts over time, for the benches that run an older script beside this
 * commit's: `runs` (this commit: each distinct limit once as a spec, then runs of stacks alike,
 * each run after its length), `specs` (442d260 on: the specs, then each stack naming them by
 * number) and `rows` (0.1: each stack carries its limits).
 */
export type DecideLayout = 'runs' | 'specs' | 'rows';

/** The layout a decide.lua source takes, from its header. */
export function layoutOf(source: string): DecideLayout {
  if (/ARGV\[3\.\.\]\s+stacks\[\*\]/.test(source)) return 'runs';
  return /ARGV\[2\.\.\]\s+specs\[#\]/.test(source) ? 'specs' : 'rows';
}

/** decide.lua's ARGV after `now` for `count` stacks (one by default) of one limit each. */
export function oneLimitArgs(
  layout: DecideLayout,
  consume: '1' | '0',
  algorithm: string,
  limit: number,
  windowMs: number,
  permits: number,
  count = 1,
): (string | number)[] {
  if (layout === 'rows') return Array.from({ length: count }, () => [consume, 1, algorithm, limit, windowMs, permits]).flat();
  const spec = [1, algorithm, limit, windowMs, permits];
  if (layout === 'specs') return [...spec, ...Array.from({ length: count }, () => [consume, 1, 1]).flat()];
  return [...spec, count, consume, 1, 1];
}

/**
 * A one-limit stack's verdict and grant id from decide.lua's reply, asked for with
 * `callBuffer('EVALSHA', …)`: this commit's packed string (a Buffer, read by its generated
 * binding; `algorithm` and `permits` write its grant id out) or an earlier commit's array (verdict
 * first, grant id sixth).
 */
export function oneLimitReply(reply: unknown, algorithm: RateLimitDecideSpec['algorithm'] = 'fw', permits = 1): { granted: boolean; grant: string } {
  if (Buffer.isBuffer(reply)) {
    const call = { keys: { states: [] }, args: { specs: [], stacks: [{ consume: '1', limits: [1] }] } } as const;
    const { now, stacks } = SCRIPT_BINDINGS['rate-limit/decide.lua'].decode(reply, call);
    const stack = stacks[0]!;
    if (stack.verdict === RateLimitReply.STACK_FAILED) throw new Error(stack.error);
    const limit = stack.limits[0]!;
    const grant = isGranted(limit) ? grantText({ algorithm, limit: 0, windowMs: 0, permits }, limit, now) : '';
    return { granted: stack.verdict === RateLimitReply.GRANTED, grant };
  }
  const values = reply as unknown[];
  const grant = values[5];
  return { granted: values[0] === 1, grant: Buffer.isBuffer(grant) ? grant.toString('utf8') : typeof grant === 'string' ? grant : '' };
}

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
 * `evalshaBuffer`: this commit's packed string (a Buffer: stack verdict, limit verdict,
 * remaining, retryAfterMs, resetMs, grant; see its header) or an earlier commit's array.
 */
export function oneLimitReply(reply: unknown): { granted: boolean; grant: string } {
  if (Buffer.isBuffer(reply)) {
    const length = reply.readUInt16BE(26);
    return { granted: reply.readInt8(0) === 1, grant: reply.toString('utf8', 28, 28 + length) };
  }
  const values = reply as unknown[];
  const grant = values[5];
  return { granted: values[0] === 1, grant: Buffer.isBuffer(grant) ? grant.toString('utf8') : typeof grant === 'string' ? grant : '' };
}

/**
 * decide.lua's ARGV after `now` for a stack of one limit. `specs`: this commit's layout (the
 * limit's spec once, then the stack naming it by number). `rows`: the layout of every commit
 * before it (each stack carries its limits), for the benches that run an older script beside it.
 */
export function oneLimitArgs(
  layout: 'specs' | 'rows',
  consume: '1' | '0',
  algorithm: string,
  limit: number,
  windowMs: number,
  permits: number,
): (string | number)[] {
  return layout === 'specs' ? [1, algorithm, limit, windowMs, permits, consume, 1, 1] : [consume, 1, algorithm, limit, windowMs, permits];
}

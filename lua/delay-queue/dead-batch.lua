-- Include: which dead messages one retry or purge call moves.
-- dead_batch(dead, first, now) -> ids: with ARGV[first..] ids, those of them that are dead; with
-- none, the oldest that died at or before ARGV[first - 1] (ms; '' for now), at most
-- ARGV[first - 2] of them. The bound in time lets "all" end while messages keep dying; the
-- count keeps each call short.
local function dead_batch(dead, first, now)
  local picked = {}
  if #ARGV >= first then
    for i = first, #ARGV do
      if redis.call('ZSCORE', dead, ARGV[i]) then picked[#picked + 1] = ARGV[i] end
    end
    return picked
  end
  local bound = ARGV[first - 1] ~= '' and ARGV[first - 1] or int(now)
  return redis.call('ZRANGEBYSCORE', dead, '-inf', bound, 'LIMIT', 0, tonumber(ARGV[first - 2]))
end

-- Lease the hashes that are due for a sweep, so no two sweepers work on one hash at once.
-- A leased member's score is LEASED + its lease deadline: above every due time, so a
-- registration made meanwhile (ZADD LT) always lowers it and the release can tell.
-- KEYS[1]  one shard of the sweep registry (zset: user key -> next sweep time in ms)
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  at most this many hashes
-- ARGV[3]  lease in ms: an unreleased lease (its sweeper died) can be claimed again after it
-- Returns  { lease score, user key, ... }
--- @include "../includes/server-time.lua"

local rcall = redis.call
local LEASED = 1125899906842624 -- 2^50 ms: no due time comes near it
local now = now_ms(ARGV[1])
local limit = tonumber(ARGV[2])
local claimed = rcall('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
if #claimed < limit then
  local stale = rcall('ZRANGEBYSCORE', KEYS[1], LEASED, LEASED + now, 'LIMIT', 0, limit - #claimed)
  for i = 1, #stale do claimed[#claimed + 1] = stale[i] end
end
local lease = LEASED + now + tonumber(ARGV[3])
for i = 1, #claimed do rcall('ZADD', KEYS[1], lease, claimed[i]) end
table.insert(claimed, 1, string.format('%d', lease))
return claimed

-- Lease the hashes that are due for a sweep, so no two sweepers work on one hash at once.
-- A leased member's score is LEASED + its lease deadline: above every due time, so a
-- registration made meanwhile (registry-add.lua) always lowers it and the release can tell.
-- KEYS[1]  one shard of the sweep registry (zset: user key -> next sweep time in ms)
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  at most this many hashes
-- ARGV[3]  lease in ms: an unreleased lease (its sweeper died) can be claimed again after it
-- Returns  { lease score, now (ms), the shard's earliest due time left unclaimed (ms, NOTHING_DUE:
--          none; with nothing claimed, the deadline of another sweeper's lease counts too),
--          then for each hash: user key, HELD if it was held (registry.lua) else NOT_HELD }
--          (codes: replies.lua)
--- @include "../includes/server-time.lua"
--- @include "replies.lua"
--- @include "registry.lua"

local now = now_ms(ARGV[1])
local limit = tonumber(ARGV[2])
local found = rcall('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
if #found < limit * 2 then
  local stale = rcall('ZRANGEBYSCORE', KEYS[1], LEASED, LEASED + now, 'WITHSCORES', 'LIMIT', 0, limit - #found / 2)
  for i = 1, #stale do found[#found + 1] = stale[i] end
end
local lease = LEASED + now + tonumber(ARGV[3])
local reply = { int(lease), int(now), 0 }
for i = 1, #found, 2 do
  local score = tonumber(found[i + 1])
  rcall('ZADD', KEYS[1], lease, found[i])
  reply[#reply + 1] = found[i]
  reply[#reply + 1] = (score < LEASED and score ~= math.floor(score)) and HELD or NOT_HELD
end
if #found == 0 then
  -- nothing due: the earliest due time, or the deadline of a lease whose sweeper may have died
  reply[3] = earliest(KEYS[1])
else
  -- what stays due after this batch (its releases will say when the batch itself is due)
  local rest = rcall('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. LEASED, 'WITHSCORES', 'LIMIT', 0, 1)
  reply[3] = rest[2] and math.floor(tonumber(rest[2])) or NOTHING_DUE
end
return reply

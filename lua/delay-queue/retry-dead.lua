-- Move dead messages back to the scheduled set, due now, their next delivery attempt 1 (and
-- their lease token still growing: revive.lua).
-- KEYS[1]  scheduled
-- KEYS[2]  in flight (unused)
-- KEYS[3]  dead
-- KEYS[4]  data
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  wake-up channel: told `now` when the retried become the queue's earliest
-- ARGV[3]  'PUBLISH', or 'SPUBLISH' on a cluster
-- ARGV[4]  without ids: at most this many (the oldest)
-- ARGV[5]  without ids: only those that died at or before this time (ms; '' for now), so
--          "all" ends
-- ARGV[6..] the ids to retry (those not dead are skipped); none: the oldest, as above
-- Returns  { how many moved, how many dead remain, now (ms) }
--- @include "../includes/server-time.lua"
--- @include "dead-batch.lua"
--- @include "revive.lua"

local rcall = redis.call
local now = now_ms(ARGV[1])
local ids = dead_batch(KEYS[3], 6, now)
if #ids > 0 then
  local head = rcall('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  for i = 1, #ids do
    local id = ids[i]
    rcall('ZREM', KEYS[3], id)
    rcall('ZADD', KEYS[1], now, id)
    revive(KEYS[4], id)
  end
  if head[2] == nil or now < tonumber(head[2]) then rcall(ARGV[3], ARGV[2], int(now)) end
end
return { #ids, rcall('ZCARD', KEYS[3]), now }

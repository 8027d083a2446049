-- Move dead messages back to the scheduled set, due now, their next delivery attempt 1 (and
-- their lease token still growing: revive.lua).
-- KEYS[1]    scheduled
-- KEYS[2]    inFlight  (unused)
-- KEYS[3]    dead
-- KEYS[4]    data
-- ARGV[1]    now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]    wakeChannel: string  told `now` when the retried become the queue's earliest
-- ARGV[3]    publish: 'PUBLISH' | 'SPUBLISH'  SPUBLISH on a cluster
-- ARGV[4]    count: int  without ids: at most this many (the oldest)
-- ARGV[5]    diedBy: ms = ''  without ids: only those that died at or before this time ('' for
--            now), so "all" ends
-- ARGV[6..]  ids[]: string  the ids to retry (those not dead are skipped); none: the oldest, as
--            above
-- Returns    a flat array:
--              - done: int  how many moved
--              - remaining: int  how many dead remain
--              - now: ms
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

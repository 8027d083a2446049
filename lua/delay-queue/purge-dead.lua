-- Delete dead messages with all their fields (payload, attempt counts, error).
-- KEYS[1]    scheduled  (unused)
-- KEYS[2]    inFlight  (unused)
-- KEYS[3]    dead
-- KEYS[4]    data
-- ARGV[1]    now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]    count: int  without ids: at most this many (the oldest)
-- ARGV[3]    diedBy: ms = ''  without ids: only those that died at or before this time ('' for
--            now), so "all" ends
-- ARGV[4..]  ids[]: string  the ids to purge (those not dead are skipped); none: the oldest, as
--            above
-- Returns    a flat array:
--              - done: int  how many were deleted
--              - remaining: int  how many dead remain
--              - now: ms
--- @include "../includes/server-time.lua"
--- @include "dead-batch.lua"
--- @include "message-fields.lua"

local rcall = redis.call
local now = now_ms(ARGV[1])
local ids = dead_batch(KEYS[3], 4, now)
for i = 1, #ids do
  local id = ids[i]
  rcall('ZREM', KEYS[3], id)
  rcall('HDEL', KEYS[4], message_fields(id))
end
return { #ids, rcall('ZCARD', KEYS[3]), now }

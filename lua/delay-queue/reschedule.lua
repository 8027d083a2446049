-- Move a scheduled message (not one in flight or dead) to a new runAt.
-- KEYS[1]  scheduled
-- KEYS[2]  in flight (unused)
-- KEYS[3]  dead (unused)
-- KEYS[4]  data (unused)
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  id
-- ARGV[3]  runAt in ms, or '' to use now + ARGV[4]
-- ARGV[4]  delay in ms (when ARGV[3] is '')
-- ARGV[5]  wake-up channel
-- ARGV[6]  'PUBLISH', or 'SPUBLISH' on a cluster (the channel shares the queue's slot)
-- Returns  the new runAt (ms), or NOT_SCHEDULED (replies.lua) when the id is not scheduled
--- @include "replies.lua"
--- @include "../includes/server-time.lua"

local rcall = redis.call
local id = ARGV[2]
if not rcall('ZSCORE', KEYS[1], id) then return NOT_SCHEDULED end
local now = now_ms(ARGV[1])
local run_at = ARGV[3] ~= '' and tonumber(ARGV[3]) or now + tonumber(ARGV[4])
local head = rcall('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
rcall('ZADD', KEYS[1], run_at, id)
if run_at < tonumber(head[2]) then rcall(ARGV[6], ARGV[5], int(run_at)) end
return run_at

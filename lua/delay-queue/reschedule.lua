-- Move a scheduled message (not one in flight or dead) to a new runAt.
-- KEYS[1]  scheduled
-- KEYS[2]  inFlight  (unused)
-- KEYS[3]  dead  (unused)
-- KEYS[4]  data  (unused)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  id: string
-- ARGV[3]  runAt: ms | ''  in ms, or '' to use now + delayMs
-- ARGV[4]  delayMs: ms  when runAt is ''
-- ARGV[5]  wakeChannel: string
-- ARGV[6]  publish: 'PUBLISH' | 'SPUBLISH'  SPUBLISH on a cluster (the channel shares the
--          queue's slot)
-- Returns  runAt: ms | NOT_SCHEDULED  the new runAt (ms), or NOT_SCHEDULED (replies.lua) when the
--          id is not scheduled
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

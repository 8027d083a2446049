-- Disarm an expiry notification its consumer has handled (or given up on), before the outcome is
-- recorded, so no later sweep hands it over again; and say how long to wait before recording it,
-- when a second handover's enqueue may still be on its way (it must find the message still
-- queued, or it would enqueue it afresh).
-- KEYS[1]  hash  the hash (unused)
-- KEYS[2]  index  its bucket index (unused)
-- KEYS[3]  outbox  its armed expiry notifications
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  name: string  the notification's name ("<expiry>:<field>")
-- ARGV[3]  graceMs: ms  how long after a handover its enqueue may still land
-- Returns  waitMs: ms  ms to wait before the outcome is recorded (the message stays leased): 0
--          unless it was handed over more than once and the last handover is recent
--- @include "../includes/server-time.lua"
--- @include "outbox.lua"

local N, name = KEYS[3], ARGV[2]
local record = redis.call('HGET', N, handover_of(name))
disarm_notice(N, name)
local at, times = string.match(record or '', '^(%d+):(%d+)$')
if not at or tonumber(times) < 2 then return 0 end
return math.max(0, tonumber(at) + tonumber(ARGV[3]) - now_ms(ARGV[1]))

-- Schedule a message, unless its id is already scheduled or in flight.
-- KEYS[1]  scheduled (zset: id -> runAt ms)
-- KEYS[2]  in flight (zset: id -> visibility deadline ms)
-- KEYS[3]  dead (zset: id -> ms it died)
-- KEYS[4]  data (hash: 'p:'..id -> payload JSON, 'a:'..id -> deliveries so far, 'e:'..id -> last error)
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  id
-- ARGV[3]  payload (JSON)
-- ARGV[4]  runAt in ms, or '' to use now + ARGV[5]
-- ARGV[5]  delay in ms (when ARGV[4] is '')
-- ARGV[6]  wake-up channel: told the new runAt when it becomes the queue's earliest
-- ARGV[7]  'PUBLISH', or 'SPUBLISH' on a cluster (the channel shares the queue's slot)
-- Returns  { SCHEDULED if scheduled now, ALREADY_QUEUED if the id was already scheduled or in
--          flight (replies.lua); its runAt (ms) }
--- @include "replies.lua"
--- @include "../includes/server-time.lua"
--- @include "revive.lua"
--- @include "schedule.lua"

local now = now_ms(ARGV[1])
local run_at = ARGV[4] ~= '' and tonumber(ARGV[4]) or now + tonumber(ARGV[5])
local head = scheduled_head(KEYS[1])
local scheduled, at = schedule(KEYS, ARGV[2], ARGV[3], run_at)
if scheduled == SCHEDULED and (head == nil or run_at < head) then redis.call(ARGV[7], ARGV[6], int(run_at)) end
return { scheduled, at }

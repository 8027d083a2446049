-- Schedule a message, unless its id is already scheduled or in flight.
-- KEYS[1]  scheduled  zset: id -> runAt ms
-- KEYS[2]  inFlight  zset: id -> visibility deadline ms
-- KEYS[3]  dead  zset: id -> ms it died
-- KEYS[4]  data  hash: 'p:'..id -> payload JSON, 'a:'..id -> deliveries so far, 'e:'..id -> last
--          error
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  id: string
-- ARGV[3]  payload: json
-- ARGV[4]  runAt: ms | ''  in ms, or '' to use now + delayMs
-- ARGV[5]  delayMs: ms  when runAt is ''
-- ARGV[6]  wakeChannel: string  told the new runAt when it becomes the queue's earliest
-- ARGV[7]  publish: 'PUBLISH' | 'SPUBLISH'  SPUBLISH on a cluster (the channel shares the
--          queue's slot)
-- ARGV[8]  source: string = ''  '<kind> <ref>' when a part of the library enqueues a message of
--          its own (message-fields.lua's 't:'); '' for a user's message
-- ARGV[9]  context: string = ''  the trace context it is enqueued in (message-fields.lua's 'c:'),
--          or '' when untraced
-- Returns  a flat array:
--            - status: SCHEDULED | ALREADY_QUEUED  ALREADY_QUEUED if the id was already scheduled
--                or in flight (replies.lua)
--            - runAt: ms
--- @include "replies.lua"
--- @include "../includes/server-time.lua"
--- @include "revive.lua"
--- @include "schedule.lua"

local now = now_ms(ARGV[1])
local run_at = ARGV[4] ~= '' and tonumber(ARGV[4]) or now + tonumber(ARGV[5])
local head = scheduled_head(KEYS[1])
local scheduled, at = schedule(KEYS, ARGV[2], ARGV[3], run_at, ARGV[8], ARGV[9])
if scheduled == SCHEDULED and (head == nil or run_at < head) then redis.call(ARGV[7], ARGV[6], int(run_at)) end
return { scheduled, at }

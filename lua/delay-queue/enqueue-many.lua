-- Schedule many messages of one queue in one call: each as enqueue.lua would, in order (an id
-- given twice is scheduled once), and one wake-up for the earliest new runAt.
-- KEYS[1]    scheduled  zset: id -> runAt ms
-- KEYS[2]    inFlight  zset: id -> visibility deadline ms
-- KEYS[3]    dead  zset: id -> ms it died
-- KEYS[4]    data  hash: 'p:'..id -> payload JSON, 'a:'..id -> deliveries so far, 'e:'..id -> last
--            error
-- ARGV[1]    now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]    wakeChannel: string  told the earliest new runAt when it becomes the queue's earliest
-- ARGV[3]    publish: 'PUBLISH' | 'SPUBLISH'  SPUBLISH on a cluster (the channel shares the
--            queue's slot)
-- ARGV[4..]  messages[]  five per message:
--              - id: string
--              - payload: json
--              - runAt: ms | ''  in ms, or '' to use now + delayMs
--              - delayMs: ms
--              - context: string  the trace context it is enqueued in (message-fields.lua's
--                'c:'), or '' when untraced
-- Returns    messages[]  two per message:
--              - status: SCHEDULED | ALREADY_QUEUED  ALREADY_QUEUED if its id was already
--                scheduled or in flight (replies.lua)
--              - runAt: ms
--- @include "replies.lua"
--- @include "../includes/server-time.lua"
--- @include "revive.lua"
--- @include "schedule.lua"

local now = now_ms(ARGV[1])
local head = scheduled_head(KEYS[1])
local earliest = nil
local reply = {}
for i = 4, #ARGV, 5 do
  local run_at = ARGV[i + 2] ~= '' and tonumber(ARGV[i + 2]) or now + tonumber(ARGV[i + 3])
  local scheduled, at = schedule(KEYS, ARGV[i], ARGV[i + 1], run_at, '', ARGV[i + 4])
  if scheduled == SCHEDULED and (earliest == nil or run_at < earliest) then earliest = run_at end
  reply[#reply + 1] = scheduled
  reply[#reply + 1] = at
end
if earliest and (head == nil or earliest < head) then redis.call(ARGV[3], ARGV[2], int(earliest)) end
return reply

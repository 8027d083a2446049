-- Remove a recurring schedule (DelayQueueService.unschedule): its spec and state, and its pending
-- tick's message if it is not yet claimed. A tick in flight runs to its end and advances nothing.
-- KEYS[1]  scheduled
-- KEYS[2]  inFlight  (unused)
-- KEYS[3]  dead  (unused)
-- KEYS[4]  data
-- KEYS[5]  schedules  hash (recurring-set.lua)
-- ARGV[1]  name: string
-- Returns  removed: int  1 if the schedule existed, else 0
--- @include "message-fields.lua"

local rcall = redis.call
local name, book = ARGV[1], KEYS[5]
if not rcall('HGET', book, 's:' .. name) then return 0 end
local pending = rcall('HGET', book, 'n:' .. name)
if pending then
  local id = name .. '@' .. pending
  if rcall('ZREM', KEYS[1], id) == 1 then rcall('HDEL', KEYS[4], message_fields(id)) end
end
rcall('HDEL', book, 's:' .. name, 'v:' .. name, 'p:' .. name, 'l:' .. name, 'n:' .. name, 'r:' .. name)
return 1

-- Acknowledge handled messages: they leave the queue for good.
-- KEYS[1]    scheduled  (unused)
-- KEYS[2]    inFlight  in flight
-- KEYS[3]    dead  (unused)
-- KEYS[4]    data
-- ARGV[1..]  leases[]  pairs:
--              - id: string
--              - token: int  the lease token of the claim that handled it
-- Returns    acknowledged: int  how many were acknowledged; a claim that no longer holds its
--            message (the lease ran out and a later claim handed it on) changes nothing. An
--            acknowledgement frees a slot of the queue's global concurrency: a consumer waiting for
--            one is woken (free-slot.lua)
--- @include "lease.lua"
--- @include "message-fields.lua"
--- @include "free-slot.lua"

local rcall = redis.call
local acked = 0
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  if holds_lease(KEYS[2], KEYS[4], id, ARGV[i + 1]) then
    rcall('ZREM', KEYS[2], id)
    rcall('HDEL', KEYS[4], message_fields(id))
    acked = acked + 1
  end
end
if acked > 0 then free_slot(KEYS[4]) end
return acked

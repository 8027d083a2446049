-- Cancel a scheduled message (not one in flight or dead).
-- KEYS[1]  scheduled
-- KEYS[2]  inFlight  (unused)
-- KEYS[3]  dead  (unused)
-- KEYS[4]  data
-- ARGV[1]  id: string
-- Returns  cancelled: CANCELLED | NOT_CANCELLED  CANCELLED if it was scheduled and is gone
--          (replies.lua)
--- @include "replies.lua"
--- @include "message-fields.lua"

local rcall = redis.call
local id = ARGV[1]
if rcall('ZREM', KEYS[1], id) == 0 then return NOT_CANCELLED end
rcall('HDEL', KEYS[4], message_fields(id))
return CANCELLED

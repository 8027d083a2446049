-- Disarm expiry notifications once they are delivered (enqueued on their queues).
-- KEYS[1]  the hash (unused)
-- KEYS[2]  its bucket index (unused)
-- KEYS[3]  its armed expiry notifications
-- ARGV[1]  now in ms, or '' (unused: every ExpiringHash script takes it)
-- ARGV[2..] notification names ("<expiry>:<field>"), as sweep.lua handed them over
-- Returns  the number disarmed
--- @include "outbox.lua"

local disarmed = 0
for i = 2, #ARGV do
  disarmed = disarmed + disarm_notice(KEYS[3], ARGV[i])
end
return disarmed

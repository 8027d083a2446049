-- Disarm expiry notifications once they are delivered (enqueued on their queues).
-- KEYS[1]    hash  the hash (unused)
-- KEYS[2]    index  its bucket index (unused)
-- KEYS[3]    outbox  its armed expiry notifications
-- ARGV[1]    now: ms = ''  unused: every ExpiringHash script takes it
-- ARGV[2..]  names[]: string  notification names ("<expiry>:<field>"), as sweep.lua handed them
--            over
-- Returns    disarmed: int  the number disarmed
--- @include "outbox.lua"

local disarmed = 0
for i = 2, #ARGV do
  disarmed = disarmed + disarm_notice(KEYS[3], ARGV[i])
end
return disarmed

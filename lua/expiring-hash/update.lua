-- Replace a live field's value, keeping its ttl.
-- KEYS[1]  the hash
-- KEYS[2]  its bucket index (unused)
-- KEYS[3]  its armed expiry notifications (hash, same hash slot)
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  field
-- ARGV[3]  value
-- ARGV[4]  '1': native writes use HSETEX (see set.lua); else (or absent) HSET then HPEXPIREAT
-- Returns  1 if the field was live and now holds the value, else 0
--- @include "hash.lua"

hsetex = ARGV[4] == '1'
if not load_meta() then return 0 end
local expiry, value = read(ARGV[2])
if value == nil then return 0 end
write(ARGV[2], ARGV[3], expiry)
local notification = armed(ARGV[2], expiry)
if notification then arm(ARGV[2], expiry, notification.q, ARGV[3]) end
return 1

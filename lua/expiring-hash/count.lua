-- The number of live fields; removes the expired ones it has to look at to know.
-- KEYS[1]  the hash
-- KEYS[2]  its bucket index
-- KEYS[3]  its armed expiry notifications (unused)
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- Returns  live fields
--- @include "hash.lua"

if not load_meta() then return 0 end
if compact then return compact.expiry > now and 1 or 0 end
local live = live_count()
if live == 0 and drop_if_empty() then return 0 end
save_meta()
return live

-- Undo a write whose expiry timer could not be queued: deletes the field while it still holds that
-- write (its notification armed for `expiry`), so a failed call keeps no slot and no ttl-less arming.
-- KEYS[1]  the hash
-- KEYS[2]  its bucket index (a stale name there is skipped by the sweep)
-- KEYS[3]  its armed expiry notifications (hash, same hash slot)
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  field
-- ARGV[3]  the expiry the failed write armed a notification for (ms)
-- Returns  1 if the field was deleted, 0 if it no longer holds that write (deleted, re-set, moved)
--- @include "hash.lua"

if not load_meta() then return 0 end
local field, name = ARGV[2], notice(tonumber(ARGV[3]), ARGV[2])
if not rcall('HGET', N, name) then return 0 end
rcall('HDEL', N, name)
delete_fields({ field })
if not drop_if_empty() then save_meta() end
return 1

-- Remove a hash's expired fields, in a bounded batch (the background sweep calls this).
-- KEYS[1]  the hash
-- KEYS[2]  its bucket index
-- KEYS[3]  its armed expiry notifications (unused)
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  budget: at most about this many fields are looked at (indexed hashes)
-- Returns  { when to sweep this hash next (ms), or -1 for never (the hash is gone, or nothing is
--          due before the key's own expiry takes everything, or the server expires its fields
--          itself); 1 if the budget ran out }
--- @include "hash.lua"

if not load_meta() then
  rcall('DEL', B)
  return { -1, 0 }
end
if meta.next < 0 then return { -1, 0 } end
if now < meta.next then return { meta.next, 0 } end
local done = true
if meta.indexed then done = walk(tonumber(ARGV[2])) else scan() end
if drop_if_empty() then return { -1, 0 } end
if done and rcall('HLEN', H) - 1 == meta.persistent then meta.next, meta.max = -1, -1 end
save_meta()
if not done then return { now, 1 } end
-- nothing left that the key's own expiry will not take
if not needs_sweep() then return { -1, 0 } end
return { meta.next, 0 }

-- Give a live field a new ttl.
-- KEYS[1]  the hash
-- KEYS[2]  its bucket index
-- KEYS[3]  its armed expiry notifications (hash, same hash slot)
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  field
-- ARGV[3]  ttl in ms (> 0)
-- Returns  { 1 if the field was live and now has the ttl, else 0 (-1: now + ttl passes MAX_EXPIRY,
--          nothing changed);
--          the time the sweep registry must learn for this hash (ms), or -1;
--          the new expiry when the field's notification moved with it (ms), or -1 }
--- @include "hash.lua"

local expiry = now + tonumber(ARGV[3])
if expiry > MAX_EXPIRY then return { -1, -1, -1 } end
if not load_meta() then return { 0, -1, -1 } end
local field = ARGV[2]
local old, value = read(field)
if value == nil then return { 0, -1, -1 } end
local register = -1
if compact then
  rcall('PEXPIREAT', H, expiry)
else
  if native then rcall('HPEXPIREAT', H, expiry, 'FIELDS', 1, field) else write(field, value, expiry) end
  register = account(field, expiry, old)
end
local notification, notify_at = armed(field, old), -1
if notification then
  rcall('HDEL', N, notice(old, field))
  arm(field, expiry, notification.q, notification.v)
  notify_at = expiry
end
save_meta()
return { 1, register, notify_at }

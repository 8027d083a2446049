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
--- @include "../includes/server-time.lua"
--- @include "hash.lua"
--- @include "save.lua"
--- @include "fields.lua"
--- @include "write-field.lua"
--- @include "account.lua"
--- @include "arm.lua"

local H, N = KEYS[1], KEYS[3]
local now = now_ms(ARGV[1])
local expiry = now + tonumber(ARGV[3])
if expiry > MAX_EXPIRY then return { -1, -1, -1 } end
local h = open_hash(H, KEYS[2], now)
if not h then return { 0, -1, -1 } end
local field = ARGV[2]
local old, value = read_field(h, field)
if value == nil then return { 0, -1, -1 } end
local register = -1
if h.compact then
  redis.call('PEXPIREAT', H, expiry)
else
  if h.native then redis.call('HPEXPIREAT', H, expiry, 'FIELDS', 1, field) else write_field(h, field, value, expiry, false) end
  register = account(h, field, expiry, old)
end
local notification, notify_at = armed(N, field, old), -1
if notification then
  disarm(N, field, old)
  arm(N, now, field, expiry, notification.q, notification.v)
  notify_at = expiry
end
save_hash(h)
return { 1, register, notify_at }

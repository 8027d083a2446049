-- Set a field with its own ttl, optionally only while fewer than `cap` live fields exist.
-- KEYS[1]  the hash
-- KEYS[2]  its bucket index (indexed hashes only; same hash slot)
-- KEYS[3]  its armed expiry notifications (hash, same hash slot)
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  expiry mode of a hash this call creates: 'i' (index) or 'n' (native HPEXPIREAT)
-- ARGV[3]  field
-- ARGV[4]  value
-- ARGV[5]  ttl in ms, or -1 for a field that never expires
-- ARGV[6]  cap: 0 for none; else the field is only added while fewer than this many live
--          fields exist (re-setting a live field is always accepted)
-- ARGV[7]  a queue to notify when the field expires, or ''
-- ARGV[8]  '1': native writes use HSETEX (this server has it and lets the caller run it);
--          else (or absent) HSET then HPEXPIREAT
-- Returns  { accepted (1|0, or -1 when now + ttl passes MAX_EXPIRY: nothing was written),
--          live fields after the call (-1 when no cap was asked),
--          ms until the oldest live field expires, ms until the latest does,
--          the time the sweep registry must learn for this hash (ms), or -1,
--          the expiry a notification was armed for (ms), or -1 }
--- @include "hash.lua"

local field, value, ttl, cap = ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
hsetex = ARGV[8] == '1'
local expiry = ttl >= 0 and now + ttl or -1
if expiry > MAX_EXPIRY then return { -1, -1, 0, 0, -1, -1 } end
local existed = load_meta()
local notify_at = -1

-- the write that leaves H compact: a new H of one field with a ttl, or the one field again
local function compact_write()
  write_compact(field, value, expiry)
  if ARGV[7] ~= '' then
    arm(field, expiry, ARGV[7], value)
    notify_at = expiry
  end
  return { 1, cap > 0 and 1 or -1, ttl, ttl, -1, notify_at }
end

if compact then
  if compact.expiry <= now then
    -- its one field has expired (its notification, if any, stays armed: it is due)
    rcall('DEL', H)
    compact, existed = nil, false
  elseif field == compact.field and expiry >= 0 then
    rcall('HDEL', N, notice(compact.expiry, field))
    return compact_write()
  elseif field ~= compact.field and cap == 1 then
    -- full: refused without touching H
    local left = compact.expiry - now
    return { 0, 1, left, left, -1, -1 }
  else
    expand(ARGV[2])
  end
end
if not existed and expiry >= 0 then return compact_write() end
if not existed then new_meta(ARGV[2]) end
local old = existed and read(field) or nil

local count = -1
if cap > 0 then
  count = existed and live_count() or 0
  if old == nil and count >= cap then
    if not meta.indexed then count = scan() end -- exact oldest expiry for retryAfterMs
    save_meta()
    local oldest, newest = horizon()
    return { 0, count, oldest, newest, -1, -1 }
  end
  if old == nil then count = count + 1 end
end

write(field, value, expiry)
-- a live field's notification is replaced (one that is already due stays armed)
if old and old >= 0 then rcall('HDEL', N, notice(old, field)) end
if ARGV[7] ~= '' and expiry >= 0 then
  arm(field, expiry, ARGV[7], value)
  notify_at = expiry
end
local register = account(field, expiry, old)
if index_if_large() and needs_sweep() then register = meta.next end
save_meta()
local oldest, newest = horizon()
return { 1, count, oldest, newest, register, notify_at }

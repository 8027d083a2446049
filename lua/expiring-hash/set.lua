-- Set a field with its own ttl, optionally only while fewer than `cap` live fields exist.
-- KEYS[1]  hash  the hash
-- KEYS[2]  index  its bucket index (indexed hashes only; same hash slot)
-- KEYS[3]  outbox  its armed expiry notifications (hash, same hash slot)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  mode: 'i' | 'n'  expiry mode of a hash this call creates: 'i' (index) or 'n' (native
--          HPEXPIREAT)
-- ARGV[3]  field: string
-- ARGV[4]  value: string
-- ARGV[5]  ttlMs: ms | NO_TTL  ttl, or NO_TTL for a field that never expires
-- ARGV[6]  cap: int  0 for none; else the field is only added while fewer than this many live
--          fields exist (re-setting a live field is always accepted)
-- ARGV[7]  notify: string  a queue to notify when the field expires, or ''
-- ARGV[8]  hsetex?: '1' | '0'  '1': native writes use HSETEX (this server has it and lets the
--          caller run it); else (or absent) HSET then HPEXPIREAT
-- Returns  a flat array (codes: replies.lua):
--            - verdict: ACCEPTED | FULL | OUT_OF_RANGE | PATH_REFUSED  OUT_OF_RANGE when now + ttl
--                passes MAX_EXPIRY, PATH_REFUSED when the server cannot take the path mode and
--                hsetex name: nothing written
--            - count: int | NO_CAP  live fields after the call (NO_CAP when no cap was asked)
--            - oldestMs: ms  ms until the oldest live field expires
--            - newestMs: ms  ms until the latest does
--            - registerAt: ms | NOTHING_DUE  the time the sweep registry must learn for this hash
--            - notifyAt: ms | NOTHING_DUE  the expiry a notification was armed for
--- @include "../includes/server-time.lua"
--- @include "replies.lua"
--- @include "hash.lua"
--- @include "save.lua"
--- @include "fields.lua"
--- @include "write-field.lua"
--- @include "walk.lua"
--- @include "account.lua"
--- @include "arm.lua"
--- @include "expand.lua"
--- @include "write-path.lua"

local rcall = redis.call
local H, B, N = KEYS[1], KEYS[2], KEYS[3]
local now = now_ms(ARGV[1])
local field, value, ttl, cap = ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
local hsetex = ARGV[8] == '1'
local expiry = ttl >= 0 and now + ttl or -1
if expiry > MAX_EXPIRY then return { OUT_OF_RANGE, NO_CAP, 0, 0, NOTHING_DUE, NOTHING_DUE } end
local h = open_hash(H, B, now)
-- before any write; the native commands also for an existing native hash, whatever mode was named
if not runs_path(H, ARGV[2] == 'n' or (h and h.native), hsetex) then
  return { PATH_REFUSED, NO_CAP, 0, 0, NOTHING_DUE, NOTHING_DUE }
end
local notify_at = NOTHING_DUE

-- the write that leaves H compact: a new H of one field with a ttl, or the one field again
local function compact_write()
  rcall('SET', H, compact_encode(field, value), 'PXAT', expiry)
  if ARGV[7] ~= '' then
    arm(N, now, field, expiry, ARGV[7], value)
    notify_at = expiry
  end
  return { ACCEPTED, cap > 0 and 1 or NO_CAP, ttl, ttl, NOTHING_DUE, notify_at }
end

-- ms until the earliest and the latest expiry of a live field (0 when none has a ttl)
local function horizon()
  local meta = h.meta
  local oldest = meta.next >= 0 and math.max(0, meta.next - now) or 0
  local newest = meta.max >= 0 and math.max(0, meta.max - now) or 0
  return oldest, newest
end

local one = h and h.compact
if one then
  if one.expiry <= now then
    -- its one field has expired (its notification, if any, stays armed: it is due)
    rcall('DEL', H)
    h = false
  elseif field == one.field and expiry >= 0 then
    disarm(N, field, one.expiry)
    return compact_write()
  elseif field ~= one.field and cap == 1 then
    -- full: refused without touching H
    local left = one.expiry - now
    return { FULL, 1, left, left, NOTHING_DUE, NOTHING_DUE }
  else
    h = expand(h, ARGV[2], hsetex)
  end
end
local existed = h ~= false
if not existed and expiry >= 0 then return compact_write() end
h = h or new_hash(H, B, now, ARGV[2])
h.hsetex = hsetex
local old = existed and read_field(h, field) or nil

local count = NO_CAP
if cap > 0 then
  count = existed and live_count(h) or 0
  if old == nil and count >= cap then
    if not h.meta.indexed then count = scan(h) end -- exact oldest expiry for retryAfterMs
    save_hash(h)
    local oldest, newest = horizon()
    return { FULL, count, oldest, newest, NOTHING_DUE, NOTHING_DUE }
  end
  if old == nil then count = count + 1 end
end

write_field(h, field, value, expiry, hsetex)
-- a live field's notification is replaced (one that is already due stays armed)
if old and old >= 0 then disarm(N, field, old) end
if ARGV[7] ~= '' and expiry >= 0 then
  arm(N, now, field, expiry, ARGV[7], value)
  notify_at = expiry
end
local register = account(h, field, expiry, old)
if index_if_large(h) and needs_sweep(h) then register = h.meta.next end
save_hash(h)
local oldest, newest = horizon()
return { ACCEPTED, count, oldest, newest, register, notify_at }

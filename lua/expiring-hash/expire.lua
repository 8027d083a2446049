-- Give a live field a new ttl.
-- KEYS[1]  hash  the hash
-- KEYS[2]  index  its bucket index
-- KEYS[3]  outbox  its armed expiry notifications (hash, same hash slot)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  field: string
-- ARGV[3]  ttlMs: ms  ttl (> 0)
-- Returns  a flat array (codes: replies.lua):
--            - verdict: CHANGED | NOT_LIVE | OUT_OF_RANGE  CHANGED if the field was live and now
--                has the ttl; OUT_OF_RANGE: now + ttl passes MAX_EXPIRY, nothing changed
--            - registerAt: ms | NOTHING_DUE  the time the sweep registry must learn for this hash
--            - notifyAt: ms | NOTHING_DUE  the new expiry when the field's notification moved
--                with it
--- @include "../includes/server-time.lua"
--- @include "replies.lua"
--- @include "hash.lua"
--- @include "save.lua"
--- @include "fields.lua"
--- @include "write-field.lua"
--- @include "account.lua"
--- @include "arm.lua"

local H, N = KEYS[1], KEYS[3]
local now = now_ms(ARGV[1])
local expiry = now + tonumber(ARGV[3])
if expiry > MAX_EXPIRY then return { OUT_OF_RANGE, NOTHING_DUE, NOTHING_DUE } end
local h = open_hash(H, KEYS[2], now)
if not h then return { NOT_LIVE, NOTHING_DUE, NOTHING_DUE } end
local field = ARGV[2]
local old, value = read_field(h, field)
if value == nil then return { NOT_LIVE, NOTHING_DUE, NOTHING_DUE } end
local register = NOTHING_DUE
if h.compact then
  redis.call('PEXPIREAT', H, expiry)
else
  if h.native then redis.call('HPEXPIREAT', H, expiry, 'FIELDS', 1, field) else write_field(h, field, value, expiry, false) end
  register = account(h, field, expiry, old)
end
local notification, notify_at = armed(N, field, old), NOTHING_DUE
if notification then
  disarm(N, field, old)
  arm(N, now, field, expiry, notification.q, notification.v)
  notify_at = expiry
end
save_hash(h)
return { CHANGED, register, notify_at }

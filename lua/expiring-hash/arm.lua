-- Include: arming expiry notifications in an outbox (outbox.lua).
-- arm(outbox, now, field, expiry, queue, value) -> nothing; arms `field`'s notification (`value`,
--   to `queue`) due at `expiry` (ms); the outbox lives NOTIFY_GRACE_MS past its latest
-- armed(outbox, field, expiry) -> the notification { q, v } of a live field expiring at `expiry`
--   (-1 or nil: none), or nil
--- @include "outbox.lua"

local NOTIFY_GRACE_MS = 86400000

local function arm(outbox, now, field, expiry, queue, value)
  redis.call('HSET', outbox, notice(expiry, field), cjson.encode({ q = queue, v = value }))
  local keep = expiry + NOTIFY_GRACE_MS
  local pttl = redis.call('PTTL', outbox)
  if pttl < 0 or now + pttl < keep then redis.call('PEXPIREAT', outbox, keep) end
end

local function armed(outbox, field, expiry)
  if not expiry or expiry < 0 then return nil end
  local raw = redis.call('HGET', outbox, notice(expiry, field))
  return raw and cjson.decode(raw) or nil
end

-- Include: the outbox N of armed expiry notifications, "<expiry>:<field>" -> JSON { q, v }; a
-- notification handed over for delivery also has "h:<expiry>:<field>" -> "<when (ms)>:<times>",
-- kept until it is disarmed.
-- notice(expiry, field) -> the name of `field`'s notification armed for `expiry`
-- notice_due(name) -> the expiry (ms) in a name; nil for a handover record
-- handover_of(name) -> the name of its handover record
-- disarm_notice(outbox, name) -> 1 if it was armed, else 0; removes it and its handover record
-- disarm(outbox, field, expiry) -> nothing; removes `field`'s notification armed for `expiry`
--- @include "../includes/server-time.lua"

local function notice(expiry, field)
  return int(expiry) .. ':' .. field
end

local function notice_due(name)
  return tonumber(string.match(name, '^(%d+):'))
end

local function handover_of(name)
  return 'h:' .. name
end

local function disarm_notice(outbox, name)
  return redis.call('HDEL', outbox, name, handover_of(name)) > 0 and 1 or 0
end

local function disarm(outbox, field, expiry)
  disarm_notice(outbox, notice(expiry, field))
end

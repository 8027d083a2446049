-- Include: the outbox N of armed expiry notifications, "<expiry>:<field>" -> JSON { q, v }.
-- notice(expiry, field) -> the name of `field`'s notification armed for `expiry`
-- notice_due(name) -> the expiry (ms) in a name
-- disarm(outbox, field, expiry) -> nothing; removes `field`'s notification armed for `expiry`
--- @include "../includes/server-time.lua"

local function notice(expiry, field)
  return int(expiry) .. ':' .. field
end

local function notice_due(name)
  return tonumber(string.match(name, '^(%d+):'))
end

local function disarm(outbox, field, expiry)
  redis.call('HDEL', outbox, notice(expiry, field))
end

-- Include: fixed-window limiter, one counter per window aligned to multiples of windowMs since
-- the Unix epoch. State: hash { w = window index, c = permits granted in it }, expiring when the
-- window ends, so the counter and its expiry are set in the same atomic step.
-- fixed_window(key, limit, windowMs, permits, now) -> decision (see decide.lua)
local function fixed_window(key, limit, windowMs, permits, now)
  local window = math.floor(now / windowMs)
  local endsIn = (window + 1) * windowMs - now
  local state = redis.call('HMGET', key, 'w', 'c')
  local used = 0
  if tonumber(state[1]) == window then used = tonumber(state[2]) end
  local d = { allowed = used + permits <= limit, remaining = limit - used, retry = 0, reset = 0 }
  if used > 0 then d.reset = endsIn end
  if not d.allowed then d.retry = endsIn end
  d.commit = function()
    redis.call('HSET', key, 'w', int(window), 'c', int(used + permits))
    redis.call('PEXPIRE', key, int(endsIn))
    d.remaining = limit - used - permits
    d.reset = endsIn
  end
  return d
end

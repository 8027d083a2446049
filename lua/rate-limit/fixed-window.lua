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
    if used > 0 then
      redis.call('HINCRBY', key, 'c', permits)
    else
      -- first grant of this window: the expiry is the window's end, set once
      redis.call('HSET', key, 'w', int(window), 'c', int(permits))
      redis.call('PEXPIRE', key, int(endsIn))
    end
    d.remaining = limit - used - permits
    d.reset = endsIn
  end
  return d
end

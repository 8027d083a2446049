-- Include: fixed-window limiter, one counter per window aligned to multiples of windowMs since
-- the Unix epoch. State: hash { w = window index, c = permits granted in it }, expiring when the
-- window ends, so the counter and its expiry are set in the same atomic step.
-- fixed_window.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, used
-- fixed_window.commit(key, limit, windowMs, permits, now, used) -> remaining, reset, grant id
--   (the window's index)
-- fixed_window.refund(key, limit, windowMs, permits, now, grant) -> permits given back: only while
--   the grant's window is the stored one, and never more than it counts
-- (see decide.lua; plain values rather than a table per decision: this runs per request)
local fixed_window = {}

function fixed_window.check(key, limit, windowMs, permits, now)
  local window = math.floor(now / windowMs)
  local endsIn = (window + 1) * windowMs - now
  local state = redis.call('HMGET', key, 'w', 'c')
  local used = 0
  if tonumber(state[1]) == window then used = tonumber(state[2]) end
  local allowed = used + permits <= limit
  return allowed, limit - used, allowed and 0 or endsIn, used > 0 and endsIn or 0, used
end

function fixed_window.commit(key, limit, windowMs, permits, now, used)
  local window = math.floor(now / windowMs)
  local endsIn = (window + 1) * windowMs - now
  if used > 0 then
    redis.call('HINCRBY', key, 'c', permits)
  else
    -- first grant of this window: the expiry is the window's end, set once
    redis.call('HSET', key, 'w', int(window), 'c', int(permits))
    redis.call('PEXPIRE', key, int(endsIn))
  end
  return limit - used - permits, endsIn, int(window)
end

function fixed_window.refund(key, limit, windowMs, permits, now, grant)
  local state = redis.call('HMGET', key, 'w', 'c')
  if state[1] ~= grant then return 0 end
  local back = math.min(permits, tonumber(state[2]))
  if back > 0 then redis.call('HINCRBY', key, 'c', -back) end
  return back
end

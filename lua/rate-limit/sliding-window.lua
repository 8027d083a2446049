-- Include: exact sliding-window limiter. State: sorted set, one member per granted permit, scored
-- by grant time (ms). A permit granted at t counts against every request before t + windowMs, so
-- no span of windowMs ever holds more than `limit` grants. Memory is bounded by `limit` members;
-- the key expires windowMs after the last grant.
-- sliding_window.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, used
--   (reset is nil when it takes a lookup that only an uncommitted decision needs: see .reset)
-- sliding_window.commit(key, limit, windowMs, permits, now, used) -> remaining, reset
-- sliding_window.reset(key, windowMs, now) -> ms until the newest grant ages out
local sliding_window = {}

function sliding_window.check(key, limit, windowMs, permits, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - windowMs)
  local used = redis.call('ZCARD', key)
  local allowed = used + permits <= limit
  local retry = 0
  if not allowed then
    -- the request fits once the (used + permits - limit) oldest grants have aged out
    local nth = used + permits - limit - 1
    local grant = redis.call('ZRANGE', key, nth, nth, 'WITHSCORES')
    retry = tonumber(grant[2]) + windowMs - now
  end
  local reset = 0
  if used > 0 then reset = nil end
  return allowed, limit - used, retry, reset, used
end

function sliding_window.reset(key, windowMs, now)
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  return tonumber(newest[2]) + windowMs - now
end

function sliding_window.commit(key, limit, windowMs, permits, now, used)
  -- member names are unique: within one ms `used` only grows (nothing that young is purged)
  local args, stamp = {}, int(now)
  for i = 1, permits do
    args[#args + 1] = stamp
    args[#args + 1] = stamp .. '.' .. int(used + i)
    if #args >= 1000 or i == permits then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  redis.call('PEXPIRE', key, int(windowMs))
  return limit - used - permits, windowMs
end

-- Include: exact sliding-window limiter. State: sorted set, one member per granted permit, scored
-- by grant time (ms). A permit granted at t counts against every request before t + windowMs, so
-- no span of windowMs ever holds more than `limit` grants. Memory is bounded by `limit` members;
-- the key expires windowMs after the last grant.
-- sliding_window(key, limit, windowMs, permits, now) -> decision (see decide.lua)
local function sliding_window(key, limit, windowMs, permits, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - windowMs)
  local used = redis.call('ZCARD', key)
  local d = { allowed = used + permits <= limit, remaining = limit - used, retry = 0, reset = 0 }
  if used > 0 then
    -- a function: only a decision that is not committed needs the newest grant looked up
    d.reset = function()
      local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
      return tonumber(newest[2]) + windowMs - now
    end
  end
  if not d.allowed then
    -- the request fits once the (used + permits - limit) oldest grants have aged out
    local nth = used + permits - limit - 1
    local grant = redis.call('ZRANGE', key, nth, nth, 'WITHSCORES')
    d.retry = tonumber(grant[2]) + windowMs - now
  end
  d.commit = function()
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
    d.remaining = limit - used - permits
    d.reset = windowMs
  end
  return d
end

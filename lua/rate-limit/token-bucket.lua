-- Include: token bucket holding `limit` tokens, refilled continuously at limit / windowMs.
-- Exact integer arithmetic: the state is kept in units of 1 / windowMs token, so a full bucket is
-- limit * windowMs units, each ms adds `limit` units and a permit costs windowMs units (callers
-- keep limit * windowMs <= 2^53). State: hash { u = units, t = ms of last update }; the key
-- expires when the bucket would be full again, which is the same as having no key.
-- token_bucket(key, limit, windowMs, permits, now) -> decision (see decide.lua)
local function token_bucket(key, limit, windowMs, permits, now)
  local full = limit * windowMs
  local units = full
  local state = redis.call('HMGET', key, 'u', 't')
  if state[1] then
    local elapsed = math.max(0, now - tonumber(state[2]))
    units = math.min(full, tonumber(state[1]) + elapsed * limit)
  end
  local cost = permits * windowMs
  local d = {
    allowed = units >= cost,
    remaining = math.floor(units / windowMs),
    retry = 0,
    reset = math.ceil((full - units) / limit),
  }
  if not d.allowed then d.retry = math.ceil((cost - units) / limit) end
  d.commit = function()
    local left = units - cost
    local untilFull = math.ceil((full - left) / limit)
    redis.call('HSET', key, 'u', int(left), 't', int(now))
    redis.call('PEXPIRE', key, int(untilFull))
    d.remaining = math.floor(left / windowMs)
    d.reset = untilFull
  end
  return d
end

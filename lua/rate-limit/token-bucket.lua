-- Include: token bucket holding `limit` tokens, refilled continuously at limit / windowMs.
-- Exact integer arithmetic: the state is kept in units of 1 / windowMs token, so a full bucket is
-- limit * windowMs units, each ms adds `limit` units and a permit costs windowMs units (callers
-- keep limit * windowMs <= 2^53). State: hash { u = units, t = ms of last update }; the key
-- expires when the bucket would be full again, which is the same as having no key.
-- token_bucket.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, units
-- token_bucket.commit(key, limit, windowMs, permits, now, units) -> remaining, reset, grant id
--   ('': a bucket keeps no grants)
-- token_bucket.refund(key, limit, windowMs, permits, now, grant) -> whole permits given back: the
--   tokens return to the bucket, which never holds more than `limit`
local token_bucket = {}

function token_bucket.check(key, limit, windowMs, permits, now)
  local full = limit * windowMs
  local units = full
  local state = redis.call('HMGET', key, 'u', 't')
  if state[1] then
    local elapsed = math.max(0, now - tonumber(state[2]))
    units = math.min(full, tonumber(state[1]) + elapsed * limit)
  end
  local cost = permits * windowMs
  local allowed = units >= cost
  local retry = 0
  if not allowed then retry = math.ceil((cost - units) / limit) end
  return allowed, math.floor(units / windowMs), retry, math.ceil((full - units) / limit), units
end

function token_bucket.commit(key, limit, windowMs, permits, now, units)
  local left = units - permits * windowMs
  local untilFull = math.ceil((limit * windowMs - left) / limit)
  redis.call('HSET', key, 'u', int(left), 't', int(now))
  redis.call('PEXPIRE', key, int(untilFull))
  return math.floor(left / windowMs), untilFull, ''
end

function token_bucket.refund(key, limit, windowMs, permits, now, grant)
  local _, _, _, _, units = token_bucket.check(key, limit, windowMs, permits, now)
  local full = limit * windowMs
  local back = math.min(permits * windowMs, full - units)
  if units + back >= full then
    redis.call('DEL', key)
  elseif back > 0 then
    redis.call('HSET', key, 'u', int(units + back), 't', int(now))
    redis.call('PEXPIRE', key, int(math.ceil((full - units - back) / limit)))
  end
  return math.floor(back / windowMs)
end

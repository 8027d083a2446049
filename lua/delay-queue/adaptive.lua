-- Include: a consumer's adaptive rate limit (rateLimit.adaptive), AIMD per rate key, kept in the
-- key's pace hash (admit.lua) so every process shares it: l = the limit set by the latest
-- halving, t = when (ms), r = the latest upstream refusal (ms; a halving is one). Each whole
-- window since r adds 1 back, up to the configured limit, so a window with a refusal in it adds
-- nothing: the increase is computed when read, never written.
-- adaptive_limit(pace, limit, windowMs, now) -> the key's limit now (1..limit), and the time of
--   its latest halving (nil: none in force)
-- adaptive_halve(pace, limit, windowMs, now) -> the key's limit after an upstream refusal (a
--   RetryLater with pauseKey): halved, not below 1, at most once a window (refusals of the
--   messages already in flight when the first came say nothing new, but each restarts the
--   count of windows without one); the pace key lasts until the limit is whole again
local function adaptive_limit(pace, limit, windowMs, now)
  local state = redis.call('HMGET', pace, 'l', 't', 'r')
  if not state[1] then return limit, nil end
  local halved = tonumber(state[2])
  local since = math.max(halved, tonumber(state[3]) or halved)
  return math.min(limit, tonumber(state[1]) + math.floor(math.max(0, now - since) / windowMs)), halved
end

local function adaptive_halve(pace, limit, windowMs, now)
  local current, since = adaptive_limit(pace, limit, windowMs, now)
  local limited = current
  if since and now - since < windowMs then
    -- not halved again, but this window adds nothing back: a refusal only moves r forward
    local last = tonumber(redis.call('HGET', pace, 'r'))
    if not last or last < now then redis.call('HSET', pace, 'r', int(now)) end
  else
    limited = math.max(1, math.floor(current / 2))
    redis.call('HSET', pace, 'l', limited, 't', int(now), 'r', int(now))
  end
  local whole = (limit - limited + 1) * windowMs
  if redis.call('PTTL', pace) < whole then redis.call('PEXPIRE', pace, int(whole)) end
  return limited
end

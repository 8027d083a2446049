-- Include: a consumer's adaptive rate limit (rateLimit.adaptive), AIMD per rate key, kept in the
-- key's pace hash (admit.lua) so every process shares it: l = the limit set by the latest
-- halving, t = when (ms). Each whole window since then adds 1 back, up to the configured limit:
-- the increase is computed when read, never written.
-- adaptive_limit(pace, limit, windowMs, now) -> the key's limit now (1..limit), and the time of
--   its latest halving (nil: none in force)
-- adaptive_halve(pace, limit, windowMs, now) -> the key's limit after an upstream refusal (a
--   RetryLater with pauseKey): halved, not below 1, at most once a window (refusals of the
--   messages already in flight when the first came say nothing new); the pace key lasts until the
--   limit is whole again
local function adaptive_limit(pace, limit, windowMs, now)
  local state = redis.call('HMGET', pace, 'l', 't')
  if not state[1] then return limit, nil end
  local since = tonumber(state[2])
  return math.min(limit, tonumber(state[1]) + math.floor((now - since) / windowMs)), since
end

local function adaptive_halve(pace, limit, windowMs, now)
  local current, since = adaptive_limit(pace, limit, windowMs, now)
  if since and now - since < windowMs then return current end
  local halved = math.max(1, math.floor(current / 2))
  redis.call('HSET', pace, 'l', halved, 't', int(now))
  local whole = (limit - halved + 1) * windowMs
  if redis.call('PTTL', pace) < whole then redis.call('PEXPIRE', pace, int(whole)) end
  return halved
end

-- Include: what the dead set keeps.
-- trim_dead(dead, data, now, retentionMs, maxDead, budget) -> how many dead messages it deleted,
-- with all their fields (message-fields.lua, which the including script includes first): those that died before now - retentionMs, and
-- those beyond the newest maxDead (both the oldest of the set), at most `budget` per call so a
-- call stays short (the rest go with the next).
local function trim_dead(dead, data, now, retentionMs, maxDead, budget)
  local doomed = redis.call('ZRANGEBYSCORE', dead, '-inf', '(' .. int(now - retentionMs), 'LIMIT', 0, budget)
  local excess = redis.call('ZCARD', dead) - maxDead
  if excess > #doomed and budget > 0 then doomed = redis.call('ZRANGE', dead, 0, math.min(excess, budget) - 1) end
  for i = 1, #doomed do
    local gone = doomed[i]
    redis.call('ZREM', dead, gone)
    redis.call('HDEL', data, message_fields(gone))
  end
  return #doomed
end

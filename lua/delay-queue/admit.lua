-- Admit claimed messages past a consumer's rate limit: each is charged to its key's counter and
-- its handler may start, or, over the limit, it goes back to the scheduled set, due when its key
-- allows, and the claim that took it is not counted as an attempt (it never dies of waiting).
-- KEYS[1..n]  the queue's scheduled, in flight, dead (unused) and data keys, then per message the
--             counter of its rate key, in the queue's hash slot (a key may repeat)
-- ARGV[1]     now in ms, or '' to use the Redis server clock
-- ARGV[2..4]  algorithm ('fw' | 'sw' | 'tb'), limit (starts per window), windowMs (ms)
-- ARGV[5..]   pairs, in KEYS order: an id, then the attempt that claimed it
-- Returns     per message: 1 admitted; -2 that attempt no longer holds it (nothing charged); else
--             the time it is due again (ms)
-- The counters are the rate limiter's own (see lua/rate-limit): the algorithms are included, not
-- copied. A key's n-th refusal in one call is due n × windowMs / limit after the first, so a
-- backlog comes back spread over the windows it needs, not all at once each window.
--- @include "../includes/server-time.lua"
--- @include "lease.lua"
--- @include "../rate-limit/life.lua"
--- @include "../rate-limit/fixed-window.lua"
--- @include "../rate-limit/sliding-window.lua"
--- @include "../rate-limit/token-bucket.lua"

local rcall = redis.call
local alg = ({ fw = fixed_window, sw = sliding_window, tb = token_bucket })[ARGV[2]]
local limit, windowMs = tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms(ARGV[1])
local refused = {}
local reply = {}
for i = 5, #ARGV, 2 do
  local key, id = KEYS[(i - 5) / 2 + 5], ARGV[i]
  if not holds_lease(KEYS[2], KEYS[4], id, ARGV[i + 1]) then
    reply[#reply + 1] = -2
  else
    local ok, _, retry, _, state = alg.check(key, limit, windowMs, 1, now)
    if ok then
      alg.commit(key, limit, windowMs, 1, now, state)
      reply[#reply + 1] = 1
    else
      local n = refused[key] or 0
      refused[key] = n + 1
      local due = now + math.max(1, retry) + math.floor(n * windowMs / limit)
      rcall('ZREM', KEYS[2], id)
      rcall('ZADD', KEYS[1], due, id)
      -- not an attempt: the count goes back to what it was before the claim
      if rcall('HINCRBY', KEYS[4], 'a:' .. id, -1) <= 0 then rcall('HDEL', KEYS[4], 'a:' .. id) end
      reply[#reply + 1] = due
    end
  end
end
return reply

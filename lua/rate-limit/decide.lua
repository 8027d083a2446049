-- Decide a stack of rate limits in one atomic step: every limit grants, or none is charged.
-- KEYS[1..n]  one state key per limit, all in one hash slot
-- ARGV[1]     now in ms, or '' to use the Redis server clock
-- ARGV[2]     '1' to consume, '0' to peek (inspect without charging)
-- ARGV[3..]   four per limit i, in KEYS order: algorithm ('fw' | 'sw' | 'tb'), limit (permits),
--             windowMs (ms), permits to charge
-- Returns     { allowed (1|0), then four per limit: allowed (1|0), remaining (permits),
--             retryAfterMs (ms, 0 if allowed), resetMs (ms until the limit is full again) }
-- Each algorithm returns a decision { allowed, remaining, retry, reset, commit() }; `reset` may
-- be a function when computing it costs a call that a committed decision does not need.
--- @include "../includes/server-time.lua"
--- @include "fixed-window.lua"
--- @include "sliding-window.lua"
--- @include "token-bucket.lua"

local algorithms = { fw = fixed_window, sw = sliding_window, tb = token_bucket }
local now = now_ms(ARGV[1])
local consume = ARGV[2] == '1'

local decisions, allowed = {}, true
for i = 1, #KEYS do
  local a = 3 + (i - 1) * 4
  local decide = algorithms[ARGV[a]]
  local d = decide(KEYS[i], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), now)
  decisions[i] = d
  allowed = allowed and d.allowed
end

if allowed and consume then
  for i = 1, #decisions do decisions[i].commit() end
end

local reply = { allowed and 1 or 0 }
for i = 1, #decisions do
  local d = decisions[i]
  reply[#reply + 1] = d.allowed and 1 or 0
  reply[#reply + 1] = d.remaining
  reply[#reply + 1] = d.retry
  reply[#reply + 1] = type(d.reset) == 'function' and d.reset() or d.reset
end
return reply

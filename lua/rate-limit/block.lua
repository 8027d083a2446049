-- Block a limit's key: every decision on it is refused until the block ends, after which it counts
-- as before (what it used is kept, and the block charges nothing). A longer block already in force
-- stays. Stored in the counter itself (see each algorithm), so a decision reads it with the
-- counter's own state at no extra call.
-- KEYS[1]     the limit's state key
-- ARGV[1]     now in ms, or '' to use the Redis server clock
-- ARGV[2..4]  algorithm ('fw' | 'sw' | 'sc' | 'tb'), limit (permits), windowMs (ms)
-- ARGV[5]     block duration (ms)
-- ARGV[6]     optional: a pub/sub channel told the key (every process's refusal cache forgets it)
-- Returns     the block's end (ms, on the clock of ARGV[1])
--- @include "../includes/server-time.lua"
--- @include "life.lua"
--- @include "fixed-window.lua"
--- @include "sliding-window-counter.lua"
--- @include "sliding-window.lua"
--- @include "token-bucket.lua"

local alg = ({ fw = fixed_window, sw = sliding_window, sc = sliding_window_counter, tb = token_bucket })[ARGV[2]]
local now = now_ms(ARGV[1])
local untilMs = now + tonumber(ARGV[5])
alg.block(KEYS[1], tonumber(ARGV[3]), tonumber(ARGV[4]), now, untilMs)
if ARGV[6] then redis.call('PUBLISH', ARGV[6], KEYS[1]) end
return untilMs

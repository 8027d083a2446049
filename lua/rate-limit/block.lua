-- Block a limit's key: every decision on it is refused until the block ends, after which it counts
-- as before (what it used is kept, and the block charges nothing). A longer block already in force
-- stays. Stored in the counter itself (see each algorithm), so a decision reads it with the
-- counter's own state at no extra call.
-- KEYS[1]     state  the limit's state key
-- ARGV[1]     now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]     algorithm: 'fw' | 'sw' | 'sc' | 'tb'
-- ARGV[3]     limit: int  permits
-- ARGV[4]     windowMs: ms
-- ARGV[5]     durationMs: ms  the block's duration
-- ARGV[6]     channel?: string  a pub/sub channel told the key (every process's refusal cache
--             forgets it)
-- Returns     endsAt: ms  the block's end (on the clock of ARGV[1])
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

-- Charge a penalty: permits taken from one limit whether or not they fit, even past the limit
-- (the counter holds more than `limit`; a token bucket goes below empty), so the key waits longer
-- before it is granted again. Nothing to refund: no grant id.
-- KEYS[1]     state  the limit's state key
-- ARGV[1]     now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]     algorithm: 'fw' | 'sw' | 'sc' | 'tb'
-- ARGV[3]     limit: int  permits
-- ARGV[4]     windowMs: ms
-- ARGV[5]     permits: int  permits to charge
-- Returns     the verdict on one permit right after the charge (codes: replies.lua):
--               - verdict: GRANTED | REFUSED
--               - remaining: int  permits, < 0 when past the limit
--               - retryAfterMs: ms  until one permit fits
--               - resetMs: ms  until the limit is full again
--- @include "replies.lua"
--- @include "../includes/server-time.lua"
--- @include "life.lua"
--- @include "fixed-window.lua"
--- @include "sliding-window-counter.lua"
--- @include "sliding-window.lua"
--- @include "token-bucket.lua"

local alg = ({ fw = fixed_window, sw = sliding_window, sc = sliding_window_counter, tb = token_bucket })[ARGV[2]]
local now = now_ms(ARGV[1])
local key, limit, windowMs, permits = KEYS[1], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local _, _, _, _, state = alg.check(key, limit, windowMs, permits, now)
alg.commit(key, limit, windowMs, permits, now, state)
local ok, remaining, retry, reset = alg.check(key, limit, windowMs, 1, now)
return { ok and GRANTED or REFUSED, remaining, retry, reset }

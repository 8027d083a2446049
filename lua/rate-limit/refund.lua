-- Give back grants decide.lua made: each limit's refund primitive (see its include) returns
-- permits of one grant to its counter, each permit at most once however often it is asked.
-- Used by RateLimiterService.refund, and when a stack decided slot by slot on a cluster is
-- refused after some of its slots were charged.
-- KEYS[1..]   states[]  one state key per limit (on a cluster, all in one hash slot)
-- ARGV[1]     now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2..]   limits[]  five per limit, in KEYS order:
--               - algorithm: 'fw' | 'sw' | 'sc' | 'tb'
--               - limit: int  permits
--               - windowMs: ms
--               - permits: int  permits to give back (at most)
--               - grant: string  the grant id, from decide.lua's reply
-- ARGV[last]  channel?: string  after the limits: a pub/sub channel told each key, so that every
--             process's refusal cache forgets its refusals (in the same call, not a command of its
--             own)
-- Returns     given[]: int  per limit, the permits given back (0 when that grant no longer counts
--             or has been given back already)
--- @include "../includes/server-time.lua"
--- @include "life.lua"
--- @include "fixed-window.lua"
--- @include "sliding-window-counter.lua"
--- @include "sliding-window.lua"
--- @include "token-bucket.lua"

local algorithms = { fw = fixed_window, sw = sliding_window, sc = sliding_window_counter, tb = token_bucket }
local now = now_ms(ARGV[1])
local reply = {}
for i = 1, #KEYS do
  local at = 2 + (i - 1) * 5
  reply[i] = algorithms[ARGV[at]].refund(KEYS[i], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3]), now, ARGV[at + 4])
end
-- told even when no whole permit came back: a bucket may have been given part of one
local channel = ARGV[2 + #KEYS * 5]
if channel then
  for i = 1, #KEYS do redis.call('PUBLISH', channel, KEYS[i]) end
end
return reply

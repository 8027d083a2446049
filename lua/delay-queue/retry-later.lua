-- A handler asked for its message to run again later (RetryLater): back to the scheduled set,
-- due after delayMs, and the claim counted as no attempt ('d:'..id), so it never dies of asking.
-- Its last error stays as it was. With pace keys, the message's rate key and concurrency key are
-- paused until then as well: admit.lua gives every message of those keys back, uncharged, until
-- the pause ends.
-- KEYS[1]     scheduled
-- KEYS[2]     inFlight  in flight
-- KEYS[3]     dead  (unused)
-- KEYS[4]     data
-- KEYS[5..]   paces[]  none, or the pace key of the message's rate key and/or its concurrency
--             key's hold (admit.lua), the rate key's first, in the queue's hash slot: each is
--             paused until the message is due
-- ARGV[1]     now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]     id: string
-- ARGV[3]     delayMs: ms  before the message is due again
-- ARGV[4]     token: int  the lease token of the claim whose handler asked
-- ARGV[5]     limit: int = ''  with the pace key of an adaptive rate limit first: its configured
--             limit, and the key's limit is halved (adaptive.lua); '' otherwise
-- ARGV[6]     windowMs: ms = ''  the rate limit's window, with `limit`
-- Returns     a flat array:
--               - dueAt: ms | LEASE_LOST  when the message is due again (ms), or LEASE_LOST when
--                 that claim no longer holds it (replies.lua). Unless LEASE_LOST, a slot of the
--                 queue's global concurrency came free: a consumer waiting for one is woken
--                 (free-slot.lua)
--               - limit: int  the key's adaptive limit now; 0 when not adaptive (or LEASE_LOST)
--- @include "replies.lua"
--- @include "../includes/server-time.lua"
--- @include "lease.lua"
--- @include "free-slot.lua"
--- @include "adaptive.lua"

local rcall = redis.call
local id = ARGV[2]
if not holds_lease(KEYS[2], KEYS[4], id, ARGV[4]) then return { LEASE_LOST, 0 } end
local now = now_ms(ARGV[1])
local due = now + tonumber(ARGV[3])
local adaptive = 0
rcall('ZREM', KEYS[2], id)
free_slot(KEYS[4])
rcall('ZADD', KEYS[1], due, id)
rcall('HDEL', KEYS[4], 'u:' .. id)
rcall('HINCRBY', KEYS[4], 'd:' .. id, 1)
rcall('HSET', KEYS[4], 'y:' .. id, 'l ' .. int(due))
for i = 5, #KEYS do
  -- a pause only grows; the pace key lasts at least until it ends
  local pace = KEYS[i]
  local paused = tonumber(rcall('HGET', pace, 'p'))
  if not paused or paused < due then
    rcall('HSET', pace, 'p', int(due))
    if rcall('PTTL', pace) < due - now then rcall('PEXPIRE', pace, int(due - now)) end
  end
  if ARGV[5] ~= '' and i == 5 then adaptive = adaptive_halve(pace, tonumber(ARGV[5]), tonumber(ARGV[6]), now) end
end
return { due, adaptive }

-- Take one of a key's concurrency slots, unless `limit` are held. The slots are a sorted set of
-- slot ids scored by the time their lease ends: a holder renews its lease while it runs, and the
-- slots of one that died (its leases ended unrenewed) are dropped here, which gives them back.
-- KEYS[1]  slots  zset: slot id -> lease end (ms)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  id: string  the new slot's id
-- ARGV[3]  limit: int  slots held at most
-- ARGV[4]  leaseMs: ms  how long the slot lasts unless renewed
-- Returns  a flat array:
--            - taken: int  1 when the slot was taken, else 0
--            - held: int  slots held after the call (this one included when taken)
--            - retryAfterMs: ms  0 when taken; else until the soonest lease ends
--- @include "../includes/server-time.lua"

local rcall = redis.call
local now = now_ms(ARGV[1])
rcall('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = rcall('ZCARD', KEYS[1])
if held >= tonumber(ARGV[3]) then
  local soonest = rcall('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return { 0, held, tonumber(soonest[2]) - now }
end
local ends = now + tonumber(ARGV[4])
rcall('ZADD', KEYS[1], ends, ARGV[2])
-- the set lasts as long as its longest lease
if rcall('PTTL', KEYS[1]) < ends - now then rcall('PEXPIRE', KEYS[1], int(ends - now)) end
return { 1, held + 1, 0 }

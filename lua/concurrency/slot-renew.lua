-- Renew a concurrency slot while its holder runs: its lease ends `leaseMs` from now.
-- KEYS[1]  slots  zset: slot id -> lease end (ms)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  id: string
-- ARGV[3]  leaseMs: ms
-- Returns  held: int  1 when renewed; 0 when the slot was no longer held (its lease had ended and
--          it was given back): its holder now runs over the limit
--- @include "../includes/server-time.lua"

local rcall = redis.call
if not rcall('ZSCORE', KEYS[1], ARGV[2]) then return 0 end
local now = now_ms(ARGV[1])
local ends = now + tonumber(ARGV[3])
rcall('ZADD', KEYS[1], ends, ARGV[2])
if rcall('PTTL', KEYS[1]) < ends - now then rcall('PEXPIRE', KEYS[1], int(ends - now)) end
return 1

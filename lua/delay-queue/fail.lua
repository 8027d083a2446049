-- A handler failed: schedule the message again after a backoff, or move it to the dead set.
-- KEYS[1]  scheduled
-- KEYS[2]  in flight
-- KEYS[3]  dead
-- KEYS[4]  data
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  id
-- ARGV[3]  backoff in ms before the next attempt, or -1 to move the message to the dead set
-- ARGV[4]  the error, as text
-- ARGV[5]  the attempt that failed: a stale failure (its lease expired and the message was
--          handed on) must not touch the delivery now in flight
-- Returns  when the message is due again (ms); -1 when it died; -2 when that attempt no longer
--          holds the message
--- @include "../includes/server-time.lua"

local rcall = redis.call
local id = ARGV[2]
if not rcall('ZSCORE', KEYS[2], id) or rcall('HGET', KEYS[4], 'a:' .. id) ~= ARGV[5] then return -2 end
rcall('ZREM', KEYS[2], id)
local now = now_ms(ARGV[1])
rcall('HSET', KEYS[4], 'e:' .. id, ARGV[4])
local backoff = tonumber(ARGV[3])
if backoff < 0 then
  rcall('ZADD', KEYS[3], now, id)
  return -1
end
rcall('ZADD', KEYS[1], now + backoff, id)
return now + backoff

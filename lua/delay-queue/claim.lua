-- Claim due messages for one consumer, after returning expired leases (their consumer died).
-- KEYS[1]  scheduled (zset: id -> runAt ms)
-- KEYS[2]  in flight (zset: id -> visibility deadline ms)
-- KEYS[3]  dead (zset; unused, named so every DelayQueue script takes the same keys)
-- KEYS[4]  data (hash: 'p:'..id payload, 'a:'..id deliveries so far, 'e:'..id last error)
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  at most this many messages
-- ARGV[3]  visibility timeout in ms: unacknowledged by then, a message is delivered again
-- Returns  { now (ms), the next time anything is due: a scheduled runAt or a lease deadline
--          (ms; -1 when the queue is empty), then four per claimed message: id, payload,
--          runAt (ms), attempt (1 on first delivery) }
--- @include "../includes/server-time.lua"

local rcall = redis.call
local now = now_ms(ARGV[1])
local limit = tonumber(ARGV[2])
local deadline = now + tonumber(ARGV[3])

local expired = rcall('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
for i = 1, #expired do
  rcall('ZREM', KEYS[2], expired[i])
  rcall('ZADD', KEYS[1], now, expired[i])
end

local reply = { now, -1 }
local due = rcall('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
for i = 1, #due, 2 do
  local id = due[i]
  rcall('ZREM', KEYS[1], id)
  rcall('ZADD', KEYS[2], deadline, id)
  reply[#reply + 1] = id
  reply[#reply + 1] = rcall('HGET', KEYS[4], 'p:' .. id) or 'null'
  reply[#reply + 1] = tonumber(due[i + 1])
  reply[#reply + 1] = rcall('HINCRBY', KEYS[4], 'a:' .. id, 1)
end

local next_due = -1
for k = 1, 2 do
  local head = rcall('ZRANGE', KEYS[k], 0, 0, 'WITHSCORES')
  if head[2] and (next_due < 0 or tonumber(head[2]) < next_due) then next_due = tonumber(head[2]) end
end
reply[2] = next_due
return reply

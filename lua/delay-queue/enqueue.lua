-- Schedule a message, unless its id is already scheduled or in flight.
-- KEYS[1]  scheduled (zset: id -> runAt ms)
-- KEYS[2]  in flight (zset: id -> visibility deadline ms)
-- KEYS[3]  dead (zset: id -> ms it died)
-- KEYS[4]  data (hash: 'p:'..id -> payload JSON, 'a:'..id -> deliveries so far, 'e:'..id -> last error)
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  id
-- ARGV[3]  payload (JSON)
-- ARGV[4]  runAt in ms, or '' to use now + ARGV[5]
-- ARGV[5]  delay in ms (when ARGV[4] is '')
-- ARGV[6]  wake-up channel: told the new runAt when it becomes the queue's earliest
-- ARGV[7]  'PUBLISH', or 'SPUBLISH' on a cluster (the channel shares the queue's slot)
-- Returns  { 1 if scheduled now, 0 if the id was already scheduled or in flight; its runAt (ms) }
--- @include "../includes/server-time.lua"

local rcall = redis.call
local id = ARGV[2]
local existing = rcall('ZSCORE', KEYS[1], id) or rcall('ZSCORE', KEYS[2], id)
if existing then return { 0, tonumber(existing) } end

local now = now_ms(ARGV[1])
local run_at = ARGV[4] ~= '' and tonumber(ARGV[4]) or now + tonumber(ARGV[5])
-- a dead id enqueued again starts afresh
if rcall('ZREM', KEYS[3], id) == 1 then rcall('HDEL', KEYS[4], 'e:' .. id) end
rcall('HSET', KEYS[4], 'p:' .. id, ARGV[3])
rcall('HDEL', KEYS[4], 'a:' .. id)
local head = rcall('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
rcall('ZADD', KEYS[1], run_at, id)
if head[2] == nil or run_at < tonumber(head[2]) then rcall(ARGV[7], ARGV[6], int(run_at)) end
return { 1, run_at }

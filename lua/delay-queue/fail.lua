-- A handler failed: schedule the message again after a backoff, or move it to the dead set and
-- trim that set to what is kept.
-- KEYS[1]  scheduled
-- KEYS[2]  inFlight  in flight
-- KEYS[3]  dead  zset: id -> ms it died
-- KEYS[4]  data
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  id: string
-- ARGV[3]  backoffMs: ms  before the next attempt, or -1 to move the message to the dead set
-- ARGV[4]  error: string  the error, as text
-- ARGV[5]  token: int  the lease token of the claim whose handler failed: a stale failure (its
--          lease expired and the message was handed on) must not touch the delivery now in flight
-- ARGV[6]  deadRetentionMs: ms  a death deletes dead messages that died longer ago than this
-- ARGV[7]  maxDead: int  dead messages kept at most (the newest)
-- ARGV[8]  deadTrimBatch: int  dead messages deleted at most per call, so one call stays short
--          (the rest go with later deaths)
-- Returns  dueAt: ms | DIED | LEASE_LOST  when the message is due again (ms); DIED when it died;
--          LEASE_LOST when that claim no longer holds the message (codes: replies.lua). Unless
--          LEASE_LOST, a slot of the queue's global concurrency came free: a consumer waiting for
--          one is woken (free-slot.lua)
--- @include "replies.lua"
--- @include "../includes/server-time.lua"
--- @include "lease.lua"
--- @include "message-fields.lua"
--- @include "dead-trim.lua"
--- @include "free-slot.lua"

local rcall = redis.call
local id = ARGV[2]
if not holds_lease(KEYS[2], KEYS[4], id, ARGV[5]) then return LEASE_LOST end
rcall('ZREM', KEYS[2], id)
free_slot(KEYS[4])
local now = now_ms(ARGV[1])
rcall('HSET', KEYS[4], 'e:' .. id, ARGV[4])
-- a failure is an attempt, admitted or not (a rate key that could not be had fails as a handler)
rcall('HDEL', KEYS[4], 'u:' .. id)
local backoff = tonumber(ARGV[3])
if backoff >= 0 then
  rcall('ZADD', KEYS[1], now + backoff, id)
  return now + backoff
end

rcall('ZADD', KEYS[3], now, id)
trim_dead(KEYS[3], KEYS[4], now, tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]))
return DIED

-- Claim due messages for one consumer, after returning expired leases (their consumer died).
-- KEYS[1]  scheduled  zset: id -> runAt ms
-- KEYS[2]  inFlight  zset: id -> visibility deadline ms
-- KEYS[3]  dead  zset: id -> ms it died
-- KEYS[4]  data  hash: see message-fields.lua; 'w' while a consumer waits for a free slot; 'f'
--          the queue's claims so far (each claim's fence)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  count: int  at most this many messages
-- ARGV[3]  visibilityMs: ms  visibility timeout: unacknowledged by then, a message is delivered
--          again
-- ARGV[4]  deadRetentionMs: ms = ''  dead messages that died longer ago are deleted here too, so
--          they go even when nothing dies again; '' for none
-- ARGV[5]  deadTrimBatch: int = ''  with deadRetentionMs: dead messages deleted at most per call
-- ARGV[6]  globalConcurrency: int = ''  messages in flight at most, across every consumer; the
--          in-flight set holds every live lease, and a dead consumer's leases expire, so its share
--          comes back after its visibility timeout; '' for none
-- ARGV[7]  rateLimited: '1' = ''  '1' when the claim is for a rate-limited consumer: each message
--          is marked pending ('u:'..id) until admit.lua starts or defers it; a lease that runs out
--          still pending is counted as no attempt ('d:'..id), as its handler never ran
-- ARGV[8]  wakeChannel?: string  with globalConcurrency: the queue's wake-up channel; a claim that
--          leaves due messages because the queue is full records it and the publish command in
--          'w', and the first script that frees a slot publishes there (free-slot.lua)
-- ARGV[9]  publish?: 'PUBLISH' | 'SPUBLISH'  with wakeChannel: its publish command
-- Returns  a flat array:
--            - now: ms
--            - next: ms | NOTHING_DUE  the next time a claim may find work: a scheduled runAt or a
--                lease deadline, or, when the queue is full, the earliest lease deadline (when a
--                dead consumer's share comes back); NOTHING_DUE (replies.lua) when the queue is
--                empty
--            - messages[]  eight per claimed message:
--                - id: string
--                - payload: json
--                - runAt: ms
--                - attempt: int  1 on first delivery
--                - token: int  the lease token
--                - fence: int  the queue's claim count at this claim: it grows with every claim
--                    and never repeats, whatever becomes of the id (unlike the token, which
--                    starts over when an acknowledged id is enqueued again)
--                - source: string  '<kind> <ref>' for a message the library made, or '' for a
--                    user's (message-fields.lua's 't:'): a tick's schedule is advanced
--                    (recurring-advance.lua) before it runs
--                - context: string  the trace context it was enqueued in, or '' (message-fields.lua's
--                    'c:')
--- @include "replies.lua"
--- @include "../includes/server-time.lua"
--- @include "message-fields.lua"
--- @include "dead-trim.lua"

local rcall = redis.call
local now = now_ms(ARGV[1])
local limit = tonumber(ARGV[2])
local deadline = now + tonumber(ARGV[3])

-- the heads first: an idle queue costs these reads (and the dead head, below) and nothing more
local function head(key)
  local h = rcall('ZRANGE', key, 0, 0, 'WITHSCORES')
  return h[2] and tonumber(h[2]) or nil
end

local lease_head = head(KEYS[2])
local expired_any = false
if lease_head and lease_head <= now then
  expired_any = true
  local expired = rcall('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
  for i = 1, #expired do
    local id = expired[i]
    rcall('ZREM', KEYS[2], id)
    rcall('ZADD', KEYS[1], now, id)
    -- never admitted: its handler never ran, so that claim was no attempt
    if rcall('HDEL', KEYS[4], 'u:' .. id) == 1 then rcall('HINCRBY', KEYS[4], 'd:' .. id, 1) end
  end
  lease_head = head(KEYS[2])
end

-- past retention: one read of the dead head per claim, a trim only when it is due
local retention = tonumber(ARGV[4])
if retention then
  local dead_head = head(KEYS[3])
  if dead_head and dead_head < now - retention then trim_dead(KEYS[3], KEYS[4], now, retention, math.huge, tonumber(ARGV[5])) end
end

local global = tonumber(ARGV[6])
local asked = limit
if global then limit = math.min(limit, global - rcall('ZCARD', KEYS[2])) end
local admitting = ARGV[7] == '1'

local reply = { now, NOTHING_DUE }
local scheduled_head = head(KEYS[1])
if scheduled_head and scheduled_head <= now and limit > 0 then
  local due = rcall('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
  local fence = #due > 0 and rcall('HINCRBY', KEYS[4], 'f', #due / 2) - #due / 2 or 0
  for i = 1, #due, 2 do
    local id = due[i]
    rcall('ZREM', KEYS[1], id)
    rcall('ZADD', KEYS[2], deadline, id)
    -- payload, non-attempts, source and trace in one read (the middle two exist only for
    -- rate-limited consumers, revived messages and ticks; the last for traced enqueues)
    local fields = rcall('HMGET', KEYS[4], 'p:' .. id, 'd:' .. id, 't:' .. id, 'c:' .. id)
    local token = rcall('HINCRBY', KEYS[4], 'a:' .. id, 1)
    fence = fence + 1
    reply[#reply + 1] = id
    reply[#reply + 1] = fields[1] or 'null'
    reply[#reply + 1] = tonumber(due[i + 1])
    reply[#reply + 1] = token - (tonumber(fields[2]) or 0)
    reply[#reply + 1] = token
    reply[#reply + 1] = fence
    reply[#reply + 1] = fields[3] or ''
    reply[#reply + 1] = fields[4] or ''
    -- its due time, for get() and list() while it is in flight; marked pending if rate limited
    if admitting then
      rcall('HSET', KEYS[4], 'r:' .. id, due[i + 1], 'u:' .. id, token)
    else
      rcall('HSET', KEYS[4], 'r:' .. id, due[i + 1])
    end
  end
  scheduled_head = head(KEYS[1])
  if #due > 0 then lease_head = math.min(lease_head or deadline, deadline) end
end

-- due messages left because the queue is full: the waiting consumer sleeps until a slot frees
-- (told on the channel) or, at the latest, until the earliest lease runs out
local full = global and limit < asked and scheduled_head and scheduled_head <= now
if full then
  rcall('HSET', KEYS[4], 'w', ARGV[9] .. ' ' .. ARGV[8])
  reply[2] = lease_head
  return reply
end
-- leases ended here without a script that frees a slot: nobody waits on them any more
if expired_any then rcall('HDEL', KEYS[4], 'w') end

if scheduled_head and (not lease_head or scheduled_head < lease_head) then
  reply[2] = scheduled_head
elseif lease_head then
  reply[2] = lease_head
end
return reply

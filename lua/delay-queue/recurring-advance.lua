-- Advance the recurring schedules whose ticks a consumer claimed, before their handlers run:
-- each tick that is its schedule's pending one puts the next tick's message in place (or, past
-- the schedule's limit or end, none), and counts a run. Whatever the number of consumers and
-- however often the tick is delivered, only the claim that finds it pending advances: each tick
-- has one message. Ticks missed while nothing ran are not replayed: when the caller says so, the
-- claimed tick is dropped (taken out of flight as an ack would) and the latest tick by now runs in
-- its place, due at once; unless that tick's message is there already (left by a replacement),
-- when this one runs and advances as usual. A tick that is not its schedule's pending one (advanced by an earlier
-- claim of it, or its schedule replaced or removed) runs and advances nothing.
-- KEYS[1]     scheduled
-- KEYS[2]     inFlight
-- KEYS[3]     dead
-- KEYS[4]     data
-- KEYS[5]     schedules  hash (recurring-set.lua)
-- ARGV[1]     now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]     wakeChannel: string  told a tick's time when it becomes the queue's earliest
-- ARGV[3]     publish: 'PUBLISH' | 'SPUBLISH'
-- ARGV[4..]   ticks[]  five per claimed tick:
--               - id: string  '<name>@<tick ms>'
--               - token: int  the lease token of the claim that took it
--               - version: int  the version of the spec the caller computed with (0: none)
--               - next: ms | ''  the schedule's tick after this one; '' for none (its end)
--               - latest: ms | ''  the latest tick by now, when ticks were missed while nothing
--                 ran: it runs in place of this one; '' otherwise
-- Returns     verdicts[]  three per tick:
--               - verdict: RUN | DROPPED | STALE | LEASE_LOST  (replies.lua) LEASE_LOST when that
--                 claim no longer holds the message (nothing changed)
--               - version: int  with STALE, the schedule's spec version; else 0
--               - spec: string  with STALE, its spec (JSON); else ''
--- @include "replies.lua"
--- @include "../includes/server-time.lua"
--- @include "lease.lua"
--- @include "revive.lua"
--- @include "schedule.lua"
--- @include "message-fields.lua"
--- @include "free-slot.lua"

local rcall = redis.call
local book = KEYS[5]
local now = now_ms(ARGV[1])
local reply = {}
local freed = false

-- whether a message of that id is scheduled or in flight
local function queued(id)
  return rcall('ZSCORE', KEYS[1], id) or rcall('ZSCORE', KEYS[2], id)
end

-- the tick's message, marked as its schedule's; the consumers told when it is the earliest
local function put(name, at)
  local id = name .. '@' .. int(at)
  local head = scheduled_head(KEYS[1])
  if schedule(KEYS, id, rcall('HGET', book, 'p:' .. name) or 'null', at, 'tick ' .. name) == SCHEDULED then
    if head == nil or at < head then rcall(ARGV[3], ARGV[2], int(at)) end
  end
end

for i = 4, #ARGV, 5 do
  local id, token, version, next_tick, latest = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  local name, tick = string.match(id, '^(.*)@(%d+)$')
  local verdict, current, spec = RUN, 0, ''
  if not holds_lease(KEYS[2], KEYS[4], id, token) then
    verdict = LEASE_LOST
  elseif name and rcall('HGET', book, 'n:' .. name) == tick then
    current = rcall('HGET', book, 'v:' .. name)
    if current ~= version then
      verdict, spec = STALE, rcall('HGET', book, 's:' .. name)
    elseif latest ~= '' and not queued(name .. '@' .. latest) then
      -- missed while nothing ran: this one goes, the latest runs (unless the latest's message is
      -- there already, left by a replacement: its claim may have passed without advancing, so
      -- this one runs and advances instead, replaying the ticks between rather than stalling)
      rcall('ZREM', KEYS[2], id)
      rcall('HDEL', KEYS[4], message_fields(id))
      freed = true
      rcall('HSET', book, 'n:' .. name, latest)
      put(name, tonumber(latest))
      verdict = DROPPED
    else
      local runs = rcall('HINCRBY', book, 'r:' .. name, 1)
      local limit = tonumber(rcall('HGET', book, 'l:' .. name))
      if next_tick ~= '' and (not limit or runs < limit) then
        rcall('HSET', book, 'n:' .. name, next_tick)
        put(name, tonumber(next_tick))
      else
        rcall('HDEL', book, 'n:' .. name)
      end
    end
  end
  reply[#reply + 1] = verdict
  reply[#reply + 1] = verdict == STALE and tonumber(current) or 0
  reply[#reply + 1] = spec
end
if freed then free_slot(KEYS[4]) end
return reply

-- Create or replace a recurring schedule of the queue (DelayQueueService.schedule) and put its
-- first tick's message in place: id '<name>@<tick ms>', marked as the schedule's ('t:'..id). A
-- pending tick of the schedule not yet due goes, unless it is that same tick (its payload is
-- replaced); one already due or in flight runs as it is, and its claim advances nothing (the
-- schedule's pending tick is no longer it). So however often a schedule is replaced, each tick
-- has one message. The caller read the pending tick and computed `first` from it: if another
-- call changed it meanwhile, nothing is written.
-- KEYS[1]  scheduled
-- KEYS[2]  inFlight
-- KEYS[3]  dead
-- KEYS[4]  data
-- KEYS[5]  schedules  hash, per schedule name: 's:'..name its spec (JSON, as schedules() shows
--          it), 'v:'..name its version (grows with each replacement), 'p:'..name each tick's
--          payload, 'l:'..name its limit of runs (absent: none), 'n:'..name its pending tick (ms;
--          absent once it has no more), 'r:'..name its runs so far
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  name: string
-- ARGV[3]  spec: json
-- ARGV[4]  payload: json
-- ARGV[5]  limit: int | ''  runs in all, '' for no limit
-- ARGV[6]  first: ms  the schedule's first tick
-- ARGV[7]  expected: ms | ''  the pending tick the caller read ('' for none)
-- ARGV[8]  wakeChannel: string  told the tick's time when it becomes the queue's earliest
-- ARGV[9]  publish: 'PUBLISH' | 'SPUBLISH'
-- Returns  nextRunAt: ms | CHANGED  `first`; CHANGED (replies.lua) when the pending tick is not
--          `expected`
--- @include "replies.lua"
--- @include "../includes/server-time.lua"
--- @include "revive.lua"
--- @include "schedule.lua"
--- @include "message-fields.lua"

local rcall = redis.call
local now = now_ms(ARGV[1])
local name, first = ARGV[2], tonumber(ARGV[6])
local book = KEYS[5]

local old = rcall('HGET', book, 'n:' .. name)
if (old or '') ~= ARGV[7] then return CHANGED end
old = tonumber(old)
if old and old ~= first then
  local old_id = name .. '@' .. int(old)
  local at = tonumber(rcall('ZSCORE', KEYS[1], old_id))
  if at and at > now then
    rcall('ZREM', KEYS[1], old_id)
    rcall('HDEL', KEYS[4], message_fields(old_id))
  end
end
rcall('HINCRBY', book, 'v:' .. name, 1)
rcall('HSET', book, 's:' .. name, ARGV[3], 'p:' .. name, ARGV[4], 'n:' .. name, int(first), 'r:' .. name, 0)
if ARGV[5] == '' then rcall('HDEL', book, 'l:' .. name) else rcall('HSET', book, 'l:' .. name, ARGV[5]) end

local id = name .. '@' .. int(first)
local head = scheduled_head(KEYS[1])
if schedule(KEYS, id, ARGV[4], first, 'tick ' .. name) == SCHEDULED then
  if head == nil or first < head then rcall(ARGV[9], ARGV[8], int(first)) end
elseif rcall('ZSCORE', KEYS[1], id) then
  rcall('HSET', KEYS[4], 'p:' .. id, ARGV[4])
end
return first

-- A page of one of the queue's sets, in its order: by score (runAt, lease deadline, the time it
-- died), then by id (as Redis orders equal scores: bytewise). The page starts after the cursor
-- (ARGV[2], ARGV[3]) wherever that pair would sit, so it works when the message the cursor names
-- has moved on meanwhile.
-- KEYS[1]  scheduled  zset: id -> runAt ms
-- KEYS[2]  inFlight  zset: id -> lease deadline ms
-- KEYS[3]  dead  zset: id -> ms it died
-- KEYS[4]  data
-- ARGV[1]  set: 's' | 'f' | 'd'  the set: scheduled, in flight or dead
-- ARGV[2]  afterScore: ms = ''  the cursor's score (ms), or '' for the first page
-- ARGV[3]  afterId: string = ''  the cursor's id
-- ARGV[4]  count: int  at most this many messages
-- Returns  a flat array:
--            - more: MORE | LAST_PAGE  MORE if messages follow this page (replies.lua)
--            - messages[]  six per message:
--                - id: string
--                - score: ms  its score in the set
--                - payload: json
--                - attempts: int  deliveries so far (a claim awaiting its admission is none yet)
--                - error: string  the last failure's, or ''
--                - runAt: ms | nil  when it was due for the delivery in flight (or the last one,
--                    once dead); nil when no claim recorded it
--- @include "replies.lua"
--- @include "message-fields.lua"

local rcall = redis.call
local set = ({ s = KEYS[1], f = KEYS[2], d = KEYS[3] })[ARGV[1]]
local limit = tonumber(ARGV[4])

-- bytewise, as Redis compares members (Lua's < follows the server's locale)
local function after(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = a:byte(i), b:byte(i)
    if x ~= y then return x > y end
  end
  return #a > #b
end

-- the rank of the first message after the cursor: those scored lower, then a binary search
-- among those with the same score (many die in one ms when a burst fails)
local start = 0
if ARGV[2] ~= '' then
  local at = ARGV[2]
  start = rcall('ZCOUNT', set, '-inf', '(' .. at)
  local lo, hi = start, start + rcall('ZCOUNT', set, at, at)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if after(rcall('ZRANGE', set, mid, mid)[1], ARGV[3]) then hi = mid else lo = mid + 1 end
  end
  start = lo
end

local page = rcall('ZRANGE', set, start, start + limit, 'WITHSCORES')
local reply = { #page > limit * 2 and MORE or LAST_PAGE }
for i = 1, math.min(#page, limit * 2), 2 do
  local id = page[i]
  local fields = rcall('HMGET', KEYS[4], message_fields(id))
  reply[#reply + 1] = id
  reply[#reply + 1] = page[i + 1]
  reply[#reply + 1] = fields[1] or 'null'
  reply[#reply + 1] = attempts_of(fields)
  reply[#reply + 1] = fields[3] or ''
  reply[#reply + 1] = fields[6] and tonumber(fields[6]) or false
end
return reply

-- A page of the dead set, oldest first: ordered by the time each died, then by id (as Redis
-- orders equal scores: bytewise). The page starts after the cursor (ARGV[1], ARGV[2]) wherever
-- that pair would sit, so it works when the message the cursor names was retried or purged
-- meanwhile.
-- KEYS[1]  scheduled  (unused)
-- KEYS[2]  inFlight  (unused)
-- KEYS[3]  dead  zset: id -> ms it died
-- KEYS[4]  data
-- ARGV[1]  afterDiedAt: ms = ''  the cursor's time of death (ms), or '' for the first page
-- ARGV[2]  afterId: string = ''  the cursor's id
-- ARGV[3]  count: int  at most this many messages
-- Returns  a flat array:
--            - more: MORE | LAST_PAGE  MORE if messages follow this page (replies.lua)
--            - messages[]  five per message:
--                - id: string
--                - diedAt: ms
--                - payload: json
--                - attempts: int
--                - error: string
--- @include "replies.lua"
--- @include "message-fields.lua"

local rcall = redis.call
local dead = KEYS[3]
local limit = tonumber(ARGV[3])

-- bytewise, as Redis compares members (Lua's < follows the server's locale)
local function after(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = a:byte(i), b:byte(i)
    if x ~= y then return x > y end
  end
  return #a > #b
end

-- the rank of the first message after the cursor: those that died earlier, then a binary search
-- among those that died in the same ms (many die in one ms when a burst fails)
local start = 0
if ARGV[1] ~= '' then
  local at = ARGV[1]
  start = rcall('ZCOUNT', dead, '-inf', '(' .. at)
  local lo, hi = start, start + rcall('ZCOUNT', dead, at, at)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if after(rcall('ZRANGE', dead, mid, mid)[1], ARGV[2]) then hi = mid else lo = mid + 1 end
  end
  start = lo
end

local page = rcall('ZRANGE', dead, start, start + limit, 'WITHSCORES')
local reply = { #page > limit * 2 and MORE or LAST_PAGE }
for i = 1, math.min(#page, limit * 2), 2 do
  local id = page[i]
  local fields = rcall('HMGET', KEYS[4], message_fields(id))
  reply[#reply + 1] = id
  reply[#reply + 1] = page[i + 1]
  reply[#reply + 1] = fields[1] or 'null'
  reply[#reply + 1] = string.format('%d', (tonumber(fields[2]) or 0) - (tonumber(fields[4]) or 0))
  reply[#reply + 1] = fields[3] or ''
end
return reply

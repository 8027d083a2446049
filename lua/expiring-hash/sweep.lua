-- Remove a hash's expired fields, in a bounded batch, and hand over its due expiry notifications
-- (the background sweep calls this). A handed-over notification stays armed until it is disarmed
-- once delivered (notify.lua) or handled by its consumer (disarm-handled.lua); its handover
-- record says when and how often it was handed over.
-- KEYS[1]  hash  the hash
-- KEYS[2]  index  its bucket index
-- KEYS[3]  outbox  its armed expiry notifications (written with the field, in this slot)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  budget: int  at most about this many fields are looked at (indexed hashes), and at
--          most this many notifications are handed over
-- ARGV[3]  handoverMs: ms  a notification handed over is not handed over again for this long:
--          its delivery may still be under way
-- Returns  a flat array (codes: replies.lua):
--            - next: ms | NOTHING_DUE  when to sweep this hash next, or NOTHING_DUE for never (the
--                hash is gone, or nothing is due before the key's own expiry takes everything, or
--                the server expires its fields itself, and no notification is armed)
--            - left: BUDGET_SPENT | CAUGHT_UP  BUDGET_SPENT if the budget ran out
--            - notices[]  two per due notification:
--                - name: string  "<expiry>:<field>"
--                - notice: json  { q, v }
--- @include "../includes/server-time.lua"
--- @include "replies.lua"
--- @include "hash.lua"
--- @include "save.lua"
--- @include "walk.lua"
--- @include "needs-sweep.lua"
--- @include "outbox.lua"

local rcall = redis.call
local H, N = KEYS[1], KEYS[3]
local now = now_ms(ARGV[1])
local budget = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
local reply = { NOTHING_DUE, CAUGHT_UP }
local nxt, more = NOTHING_DUE, false

local function sooner(t)
  if t ~= NOTHING_DUE and (nxt == NOTHING_DUE or t < nxt) then nxt = t end
end

-- the outbox first: native mode loses a value at expiry, the outbox kept it
local armed = rcall('HGETALL', N)
local records = {}
for i = 1, #armed, 2 do records[armed[i]] = armed[i + 1] end
for i = 1, #armed, 2 do
  local name = armed[i]
  local due = notice_due(name)
  if not due then
    -- a handover record: read with its notification
  elseif due > now then
    sooner(due)
  else
    local record = handover_of(name)
    local at, times = string.match(records[record] or '', '^(%d+):(%d+)$')
    at, times = tonumber(at), tonumber(times) or 0
    if at and now < at + lease then
      sooner(at + lease)
    elseif #reply < 2 + budget * 2 then
      reply[#reply + 1], reply[#reply + 2] = name, armed[i + 1]
      rcall('HSET', N, record, int(now) .. ':' .. (times + 1))
    else
      more = true
    end
  end
end

local h = open_hash(H, KEYS[2], now)
if not h then
  rcall('DEL', KEYS[2])
elseif h.compact then
  -- nothing to sweep: the key expires with its one field
elseif h.meta.next >= 0 then
  local meta = h.meta
  if now < meta.next then
    if needs_sweep(h) then sooner(meta.next) end
  else
    local done = true
    if meta.indexed then done = walk(h, budget) else scan(h) end
    if not drop_if_empty(h) then
      if done and rcall('HLEN', H) - 1 == meta.persistent then meta.next, meta.max = -1, -1 end
      save_hash(h)
      if not done then more = true elseif needs_sweep(h) then sooner(meta.next) end
    end
  end
end

if more then nxt = now end
reply[1], reply[2] = nxt, more and BUDGET_SPENT or CAUGHT_UP
return reply

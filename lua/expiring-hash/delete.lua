-- Delete fields; an expired field is removed too but not counted.
-- KEYS[1]    hash  the hash
-- KEYS[2]    index  its bucket index
-- KEYS[3]    outbox  its armed expiry notifications (hash, same hash slot)
-- ARGV[1]    now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2..]  fields[]: string
-- Returns    deleted: int  the number of live fields deleted
--- @include "../includes/server-time.lua"
--- @include "hash.lua"
--- @include "save.lua"
--- @include "fields.lua"
--- @include "delete-fields.lua"
--- @include "outbox.lua"

local rcall = redis.call
local H, N = KEYS[1], KEYS[3]
local now = now_ms(ARGV[1])
local h = open_hash(H, KEYS[2], now)
if not h then return 0 end
local one = h.compact
if one then
  for i = 2, #ARGV do
    if ARGV[i] == one.field then
      rcall('DEL', H)
      if one.expiry <= now then return 0 end
      disarm(N, one.field, one.expiry)
      return 1
    end
  end
  return 0
end
local removed, seen, gone = 0, {}, {}
for i = 2, #ARGV do
  local field = ARGV[i]
  if not seen[field] then
    seen[field] = true
    gone[#gone + 1] = field
    local expiry = read_field(h, field)
    if expiry ~= nil then
      removed = removed + 1
      if expiry == -1 then h.meta.persistent = h.meta.persistent - 1 end
      if expiry >= 0 then disarm(N, field, expiry) end
    end
  end
end
delete_fields(H, gone)
if not drop_if_empty(h) then save_hash(h) end
return removed

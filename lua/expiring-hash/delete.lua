-- Delete fields; an expired field is removed too but not counted.
-- KEYS[1]  the hash
-- KEYS[2]  its bucket index
-- KEYS[3]  its armed expiry notifications (hash, same hash slot)
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2..] fields
-- Returns  the number of live fields deleted
--- @include "hash.lua"

if not load_meta() then return 0 end
if compact then
  for i = 2, #ARGV do
    if ARGV[i] == compact.field then
      rcall('DEL', H)
      if compact.expiry <= now then return 0 end
      rcall('HDEL', N, notice(compact.expiry, compact.field))
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
    local expiry = read(field)
    if expiry ~= nil then
      removed = removed + 1
      if expiry == -1 then meta.persistent = meta.persistent - 1 end
      if expiry >= 0 then rcall('HDEL', N, notice(expiry, field)) end
    end
  end
end
delete_fields(gone)
if not drop_if_empty() then save_meta() end
return removed

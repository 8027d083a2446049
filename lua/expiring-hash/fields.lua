-- Include: reading one field of an open hash (hash.lua), in either mode.
-- expiry_of(h, field) -> a full hash's field's expiry: -1 none, false absent, <= now expired
--   (index mode still holds it; native mode may not have reclaimed it yet)
-- read_field(h, field) -> a live field's expiry (-1: none) and value, or nil
--- @include "values.lua"

local function expiry_of(h, field)
  if h.native then
    local t = redis.call('HPEXPIRETIME', h.key, 'FIELDS', 1, field)[1]
    if t == -2 then return false end
    return t
  end
  local raw = redis.call('HGET', h.key, field)
  if not raw then return false end
  return (value_decode(h.meta.base, raw))
end

local function read_field(h, field)
  local one = h.compact
  if one then
    if field ~= one.field or one.expiry <= h.now then return nil end
    return one.expiry, one.value
  end
  local raw = redis.call('HGET', h.key, field)
  if not raw then return nil end
  local expiry, value
  if h.native then
    -- the server hides a field only once its own clock passes the expiry; by `now` (the scripts'
    -- clock, explicit in tests) it may be expired already, and index mode would say so too
    expiry, value = redis.call('HPEXPIRETIME', h.key, 'FIELDS', 1, field)[1], raw
  else
    expiry, value = value_decode(h.meta.base, raw)
  end
  if expiry >= 0 and expiry <= h.now then return nil end
  return expiry, value
end

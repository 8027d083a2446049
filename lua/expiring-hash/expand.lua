-- Include: a compact hash made full (hash.lua) before a second field comes.
-- expand(h, mode, hsetex) -> the state of the full hash in `mode` ('i'|'n') that compact h became:
--   its field written (unless expired) as write_field does, the meta field at once (for HLEN)
--- @include "hash.lua"
--- @include "write-field.lua"
--- @include "account.lua"
--- @include "save.lua"

local function expand(h, mode, hsetex)
  local one = h.compact
  redis.call('DEL', h.key)
  local full = new_hash(h.key, h.index, h.now, mode)
  full.hsetex = hsetex
  if one.expiry > h.now then
    write_field(full, one.field, one.value, one.expiry, hsetex)
    account(full, one.field, one.expiry, nil)
  end
  save_hash(full)
  return full
end

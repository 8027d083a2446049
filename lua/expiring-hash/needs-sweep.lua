-- Include: whether the sweeper has work in an open full hash (hash.lua).
-- needs_sweep(h) -> true when a field is due before the key's expiry takes all; a native hash's
--   fields the server expires itself, unless indexed (buckets to trim)
local function needs_sweep(h)
  local meta = h.meta
  if meta.next < 0 or (h.native and not meta.indexed) then return false end
  return meta.persistent > 0 or meta.next < meta.max
end

-- Include: an open full hash's meta and bucket index kept true to a field's new expiry.
-- account(h, field, expiry, old) -> the time the sweep registry must learn for h (ms), or
--   NOTHING_DUE (replies.lua),
--   for `field` going from expiry `old` (nil: absent, -1: none) to `expiry` (-1: none)
--- @include "needs-sweep.lua"
--- @include "index.lua"
--- @include "replies.lua"

local function account(h, field, expiry, old)
  local meta = h.meta
  local needed, lowered = needs_sweep(h), false
  if old == -1 then meta.persistent = meta.persistent - 1 end
  if expiry < 0 then
    meta.persistent = meta.persistent + 1
  else
    lowered = meta.next < 0 or expiry < meta.next
    if lowered then meta.next = expiry end
    if expiry > meta.max then meta.max = expiry end
    index_add(h, field, expiry, old)
  end
  if needs_sweep(h) and (lowered or not needed) then return meta.next end
  return NOTHING_DUE
end

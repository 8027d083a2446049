-- Include: bringing an open full hash (hash.lua) up to its `now`: due fields removed, the meta's
-- next, max and persistent moved on.
-- scan(h) -> live fields; one pass over all of them (small hashes) makes next, max, persistent exact;
--   next is now while an expired field still counts in HLEN (h.hidden)
-- walk(h, budget) -> true once caught up with now, walking the buckets (indexed hashes) from next
--   for at most `budget` (names checked, plus one per bucket); next is then exact if the current
--   bucket holds a pending field, else a lower bound
-- live_count(h) -> live fields, after a scan or walk if one may have expired
--- @include "../includes/server-time.lua"
--- @include "names.lua"
--- @include "buckets.lua"
--- @include "fields.lua"
--- @include "delete-fields.lua"

local function scan(h)
  local all = redis.call('HGETALL', h.key)
  local fields, expiries = {}, {}
  for i = 1, #all, 2 do
    if all[i] ~= '' then
      fields[#fields + 1] = all[i]
      if not h.native then expiries[#expiries + 1] = (value_decode(h.meta.base, all[i + 1])) end
    end
  end
  if h.native and #fields > 0 then expiries = redis.call('HPEXPIRETIME', h.key, 'FIELDS', #fields, unpack(fields)) end
  local due, live, nxt, max, persistent = {}, 0, -1, -1, 0
  for i = 1, #fields do
    local e = expiries[i]
    if e == -1 then
      live, persistent = live + 1, persistent + 1
    elseif e > h.now then
      live = live + 1
      if nxt < 0 or e < nxt then nxt = e end
      if e > max then max = e end
    elseif e ~= -2 then
      due[#due + 1] = fields[i]
    end
  end
  drop_due(h, due)
  -- an expired field that HGETALL no longer shows can still count in HLEN until the server
  -- reclaims it, and has no name to delete it by: scan again until the server has
  h.hidden = h.native and redis.call('HLEN', h.key) - 1 > live
  if h.hidden then nxt = h.now end
  h.meta.next, h.meta.max, h.meta.persistent = nxt, max, persistent
  return live
end

local function walk(h, budget)
  local meta, B = h.meta, h.index
  local bucket = bucket_of(meta.next)
  local last = bucket_of(h.now)
  while bucket <= last do
    local id = int(bucket)
    local chunks = tonumber(redis.call('HGET', B, id)) or 0
    local pending = -1
    budget = budget - 1
    for k = 1, chunks do
      local chunk = redis.call('HGET', B, chunk_name(id, k))
      if chunk then
        if budget <= 0 then
          meta.next = bucket * BUCKET_MS
          return false
        end
        local keep, due, pos = {}, {}, 1
        while pos <= #chunk do
          local field
          field, pos = name_at(chunk, pos)
          local e = expiry_of(h, field)
          if e == false and h.native then
            due[#due + 1] = field
          elseif e and e >= 0 then
            if e <= h.now then
              due[#due + 1] = field
            elseif bucket_of(e) == bucket then
              keep[#keep + 1] = name_entry(field)
              if pending < 0 or e < pending then pending = e end
            end
          end
        end
        budget = budget - #due - #keep
        drop_due(h, due)
        if #keep == 0 then redis.call('HDEL', B, chunk_name(id, k)) else redis.call('HSET', B, chunk_name(id, k), table.concat(keep)) end
      end
    end
    if pending >= 0 then
      meta.next = pending
      return true
    end
    if chunks > 0 then redis.call('HDEL', B, id) end
    bucket = bucket + 1
  end
  meta.next = bucket * BUCKET_MS
  return true
end

local function live_count(h)
  local meta, live = h.meta, nil
  if meta.next >= 0 and h.now >= meta.next then
    if meta.indexed then walk(h, math.huge) else live = scan(h) end
  end
  live = live or redis.call('HLEN', h.key) - 1
  if live == meta.persistent and not h.hidden then meta.next, meta.max = -1, -1 end
  return live
end

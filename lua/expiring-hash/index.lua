-- Include: listing an open hash's fields (hash.lua) in its bucket index (buckets.lua).
-- SMALL: a hash of more fields is indexed; a smaller one is scanned whole (walk.lua)
-- index_add(h, field, expiry, old) -> nothing; lists `field` under the bucket of `expiry` (ms) in
--   an indexed h, unless its previous expiry `old` (nil: none) is in that bucket
-- index_if_large(h) -> true when it indexed h now (called after a write grew h past SMALL): its
--   live fields listed, its expired ones removed (the walk meets only fields the index lists);
--   false, still scanned, while an expired field the server has not reclaimed hides from HGETALL
--- @include "../includes/server-time.lua"
--- @include "names.lua"
--- @include "buckets.lua"
--- @include "fields.lua"
--- @include "delete-fields.lua"

local SMALL = 128

local function index_add(h, field, expiry, old)
  if not h.meta.indexed or expiry < 0 then return end
  local bucket = bucket_of(expiry)
  if old and old >= 0 and bucket_of(old) == bucket then return end
  local id = int(bucket)
  local chunks = tonumber(redis.call('HGET', h.index, id)) or 0
  local chunk = chunks > 0 and redis.call('HGET', h.index, chunk_name(id, chunks)) or false
  local add = name_entry(field)
  if not chunk or (#chunk > 0 and #chunk + #add > CHUNK) then
    if chunks == 0 then h.grown = true end
    chunks = chunks + 1
    redis.call('HSET', h.index, id, chunks)
    chunk = ''
  end
  redis.call('HSET', h.index, chunk_name(id, chunks), chunk .. add)
end

local function index_if_large(h)
  if h.meta.indexed then return false end
  local len = redis.call('HLEN', h.key)
  if len <= SMALL + 1 then return false end
  local all, due = redis.call('HGETALL', h.key), {}
  -- an expired field HGETALL hides but HLEN still counts could never be walked: stay scanned
  -- (walk.lua) until the server has reclaimed it
  if h.native and #all / 2 < len then return false end
  h.meta.indexed = true
  for i = 1, #all, 2 do
    local field = all[i]
    if field ~= '' then
      local expiry = expiry_of(h, field)
      if expiry and expiry > h.now then
        index_add(h, field, expiry, nil)
      elseif expiry and expiry >= 0 then
        due[#due + 1] = field
      end
    end
  end
  drop_due(h, due)
  return true
end

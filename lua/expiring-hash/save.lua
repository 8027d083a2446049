-- Include: writing an open hash (hash.lua) back.
-- save_hash(h) -> nothing; writes the meta field, and H's (and B's) expiry, where they changed
-- save_expiry(h, expiry, before) -> nothing; gives H the expiry (ms, -1: none) it had as `before`
-- drop_if_empty(h) -> true when no user field is left: H and B are then deleted (not N: it may
--   hold notifications now due)
--- @include "meta.lua"

-- A native hash carries its expiry on the meta field, so the server deletes H with its last
-- field and the key needs no expiry of its own (its HSET just cleared the field's); hashes written
-- before carried it on the key, dropped once it changes. Others carry it on H (and B).
local function save_expiry(h, expiry, before_expiry)
  if h.native then
    if expiry >= 0 then redis.call('HPEXPIREAT', h.key, expiry, 'FIELDS', 1, '') end
    if before_expiry >= 0 and expiry ~= before_expiry then redis.call('PERSIST', h.key) end
    return
  end
  local keys = {}
  if expiry ~= before_expiry then keys[1] = h.key end
  if h.meta.indexed and (h.grown or expiry ~= before_expiry) then keys[#keys + 1] = h.index end
  for _, key in ipairs(keys) do
    if expiry < 0 then redis.call('PERSIST', key) else redis.call('PEXPIREAT', key, expiry) end
  end
end

local function save_hash(h)
  if h.compact then return end
  local raw = meta_format(h.meta)
  if raw == h.before and not h.grown then return end
  local before_expiry = -2
  if h.before then before_expiry = key_expiry(meta_parse(h.before)) end
  local expiry = key_expiry(h.meta)
  h.before = raw
  if h.native and h.hsetex and expiry >= 0 then
    -- one command, as for the fields (h.hsetex: write-field.lua)
    redis.call('HSETEX', h.key, 'PXAT', expiry, 'FIELDS', 1, '', raw)
    if before_expiry >= 0 and expiry ~= before_expiry then redis.call('PERSIST', h.key) end
    return
  end
  redis.call('HSET', h.key, '', raw)
  save_expiry(h, expiry, before_expiry)
end

local function drop_if_empty(h)
  if h.compact or redis.call('HLEN', h.key) > 1 then return false end
  redis.call('DEL', h.key, h.index)
  h.before = false
  return true
end

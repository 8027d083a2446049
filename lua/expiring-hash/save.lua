-- Include: writing an open hash (hash.lua) back.
-- save_hash(h) -> nothing; writes the meta field, and H's (and B's) expiry, where they changed
-- drop_if_empty(h) -> true when no user field is left: H and B are then deleted (not N: it may
--   hold notifications now due)
--- @include "meta.lua"

-- The meta field, with H's expiry as its own where H is native: the server then deletes H with its
-- last field, and the key needs no expiry (an HSET clears the field's).
local function write_meta(h, raw, expiry)
  if not h.native or expiry < 0 then
    redis.call('HSET', h.key, '', raw)
  elseif h.hsetex then
    redis.call('HSETEX', h.key, 'PXAT', expiry, 'FIELDS', 1, '', raw) -- one command, as the fields
  else
    redis.call('HSET', h.key, '', raw)
    redis.call('HPEXPIREAT', h.key, expiry, 'FIELDS', 1, '')
  end
end

-- The keys' expiry where it changed: H's (and B's) in index mode; a native H written by an earlier
-- version carried it on the key, dropped once it changes.
local function save_key_expiry(h, expiry, before_expiry)
  if h.native then
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
  write_meta(h, raw, expiry)
  save_key_expiry(h, expiry, before_expiry)
end

local function drop_if_empty(h)
  if h.compact or redis.call('HLEN', h.key) > 1 then return false end
  redis.call('DEL', h.key, h.index)
  h.before = false
  return true
end

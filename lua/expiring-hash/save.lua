-- Include: writing an open hash (hash.lua) back.
-- save_hash(h) -> nothing; writes the meta field, and H's (and B's) expiry, where they changed
-- drop_if_empty(h) -> true when no user field is left: H and B are then deleted (not N: it may
--   hold notifications now due)
--- @include "meta.lua"

local function save_hash(h)
  if h.compact then return end
  local raw = meta_format(h.meta)
  if raw == h.before and not h.grown then return end
  local before_expiry = -2
  if h.before then before_expiry = key_expiry(meta_parse(h.before)) end
  redis.call('HSET', h.key, '', raw)
  h.before = raw
  local expiry = key_expiry(h.meta)
  local keys = {}
  if expiry ~= before_expiry then keys[1] = h.key end
  if h.meta.indexed and (h.grown or expiry ~= before_expiry) then keys[#keys + 1] = h.index end
  for _, key in ipairs(keys) do
    if expiry < 0 then redis.call('PERSIST', key) else redis.call('PEXPIREAT', key, expiry) end
  end
end

local function drop_if_empty(h)
  if h.compact or redis.call('HLEN', h.key) > 1 then return false end
  redis.call('DEL', h.key, h.index)
  h.before = false
  return true
end

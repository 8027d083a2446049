-- Include: opening an expiring hash (layouts: docs/how-it-works.md, ExpiringHash keys). A script
-- holds it as a table, its state: { key (H), index (B), now (ms), grown (B gained a bucket) },
-- and compact = { field, value, expiry } or meta (meta.lua), native, before (the meta field as
-- read or last written; false: none), hsetex (native writes may use HSETEX: set by the scripts
-- that are told so).
-- open_hash(H, B, now) -> the state of H, or false when H does not exist
-- new_hash(H, B, now, mode) -> the state of a full hash about to be created in `mode` ('i'|'n')
--- @include "meta.lua"
--- @include "compact.lua"

local function open_hash(key, index, now)
  local kind = redis.call('TYPE', key).ok
  if kind == 'none' then return false end
  local h = { key = key, index = index, now = now, grown = false }
  if kind == 'string' then
    local field, value = compact_decode(redis.call('GET', key))
    h.compact = { field = field, value = value, expiry = redis.call('PEXPIRETIME', key) }
    return h
  end
  local raw = redis.call('HGET', key, '')
  if not raw then
    -- a compact hash as earlier versions wrote it: a hash of one field
    local only = redis.call('HGETALL', key)
    if #only == 0 then return false end
    h.compact = { field = only[1], value = only[2], expiry = redis.call('PEXPIRETIME', key) }
    return h
  end
  h.meta, h.before = meta_parse(raw), raw
  h.native = h.meta.mode == 'n'
  return h
end

local function new_hash(key, index, now, mode)
  return { key = key, index = index, now = now, grown = false, meta = meta_new(mode, now), native = mode == 'n', before = false }
end

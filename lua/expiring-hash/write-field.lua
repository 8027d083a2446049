-- Include: writing one field of an open hash (hash.lua), in either mode.
-- MAX_EXPIRY: the latest field expiry Redis keeps (2^46 - 1 ms), in both modes (MAX_EXPIRY_MS in
--   TypeScript): a later one would fail a write halfway
-- write_field(h, field, value, expiry, hsetex) -> nothing; sets `field` to `value` expiring at
--   `expiry` (ms, -1: none; a compact hash keeps its key's), with one HSETEX in native mode when
--   `hsetex`, else HSET then HPEXPIREAT
--- @include "values.lua"
--- @include "compact.lua"

local MAX_EXPIRY = 70368744177663

local function write_field(h, field, value, expiry, hsetex)
  if h.compact then
    -- one written as a hash by earlier versions becomes a string
    redis.call('SET', h.key, compact_encode(field, value), 'KEEPTTL')
    return
  end
  if not h.native then
    redis.call('HSET', h.key, field, value_encode(h.meta.base, expiry, value))
    return
  end
  if expiry >= 0 and hsetex then
    redis.call('HSETEX', h.key, 'PXAT', expiry, 'FIELDS', 1, field, value)
    return
  end
  redis.call('HSET', h.key, field, value) -- clears the field's previous ttl
  if expiry >= 0 then redis.call('HPEXPIREAT', h.key, expiry, 'FIELDS', 1, field) end
end

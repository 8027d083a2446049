-- Include: the meta field "" of a full hash, "<mode>,<base>,<next>,<max>,<persistent>,<indexed>"
-- (next and max relative to base, '' for -1), as a table { mode = 'i'|'n', base, next, max (ms,
-- -1: none), persistent (fields without ttl), indexed (boolean) }.
-- meta_new(mode, now) -> the meta of a hash created at `now` (ms), with no field yet
-- meta_format(meta) -> the field's text
-- meta_parse(raw) -> the table the text `raw` holds
-- key_expiry(meta) -> the expiry the key carries (ms): -1 while a field has no ttl, else max
--- @include "../includes/server-time.lua"

local function meta_new(mode, now)
  return { mode = mode, base = now, next = -1, max = -1, persistent = 0, indexed = false }
end

local function meta_relative(t, base)
  return t < 0 and '' or int(t - base)
end

local function meta_format(meta)
  return table.concat({ meta.mode, int(meta.base), meta_relative(meta.next, meta.base), meta_relative(meta.max, meta.base),
    int(meta.persistent), meta.indexed and '1' or '0' }, ',')
end

local function meta_absolute(text, base)
  return text == '' and -1 or base + tonumber(text)
end

local function meta_parse(raw)
  local mode, base, nxt, max, persistent, indexed = string.match(raw, '^(%a),(%d+),(-?%d*),(-?%d*),(%d+),(%d)$')
  base = tonumber(base)
  return { mode = mode, base = base, next = meta_absolute(nxt, base), max = meta_absolute(max, base),
    persistent = tonumber(persistent), indexed = indexed == '1' }
end

local function key_expiry(meta)
  if meta.persistent > 0 or meta.max < 0 then return -1 end
  return meta.max
end

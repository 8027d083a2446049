-- Include: a compact hash, one string key: its one field as a name (names.lua), then the value.
-- compact_encode(field, value) -> the key's value
-- compact_decode(raw) -> the field and the value that the key's value `raw` holds
--- @include "names.lua"

local function compact_encode(field, value)
  return name_entry(field) .. value
end

local function compact_decode(raw)
  local field, rest = name_at(raw, 1)
  return field, string.sub(raw, rest)
end

-- Include: a name with its 2-byte big-endian length before it (a name may hold any byte).
-- name_entry(name) -> the name as stored
-- name_at(text, pos) -> the name stored at byte `pos` of `text`, and the byte after it
local function name_entry(name)
  return struct.pack('>I2', #name) .. name
end

local function name_at(text, pos)
  local len = struct.unpack('>I2', text, pos)
  return string.sub(text, pos + 2, pos + 1 + len), pos + 2 + len
end

-- Include: an index-mode value: 4 bytes big-endian (the expiry's offset from the meta's base,
-- NO_TTL_MARK, or LONG_MARK then the 8-byte expiry), then the user's value.
-- value_encode(base, expiry, value) -> the stored value for `expiry` (ms, -1: none)
-- value_decode(base, raw) -> the expiry (-1: none) and the user's value in the stored `raw`
local NO_TTL_MARK, LONG_MARK = 4294967295, 4294967294

local function value_encode(base, expiry, value)
  if expiry < 0 then return struct.pack('>I4', NO_TTL_MARK) .. value end
  local offset = expiry - base
  if offset >= 0 and offset < LONG_MARK then return struct.pack('>I4', offset) .. value end
  return struct.pack('>I4d', LONG_MARK, expiry) .. value
end

local function value_decode(base, raw)
  local head = struct.unpack('>I4', raw)
  if head == NO_TTL_MARK then return -1, string.sub(raw, 5) end
  if head == LONG_MARK then return struct.unpack('>d', raw, 5), string.sub(raw, 13) end
  return base + head, string.sub(raw, 5)
end

-- Every live field with its value and remaining ttl (read-only).
-- KEYS[1]  hash  the hash
-- KEYS[2]  index  its bucket index (unused)
-- KEYS[3]  outbox  its armed expiry notifications (unused)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- Returns  entries[]  three per live field:
--            - field: string
--            - value: string
--            - ttlMs: ms | NO_TTL  ms left (NO_TTL: none; codes: replies.lua)
--- @include "../includes/server-time.lua"
--- @include "replies.lua"
--- @include "hash.lua"
--- @include "values.lua"

local rcall = redis.call
local H = KEYS[1]
local now = now_ms(ARGV[1])
local h = open_hash(H, KEYS[2], now)
if not h then return {} end
if h.compact then
  if h.compact.expiry <= now then return {} end
  return { h.compact.field, h.compact.value, h.compact.expiry - now }
end
local all = rcall('HGETALL', H)
local reply, fields, values = {}, {}, {}
for i = 1, #all, 2 do
  if all[i] ~= '' then
    fields[#fields + 1], values[#values + 1] = all[i], all[i + 1]
  end
end
local expiries = {}
if h.native then
  for i = 1, #fields, 1000 do
    local part = rcall('HPEXPIRETIME', H, 'FIELDS', math.min(1000, #fields - i + 1), unpack(fields, i, math.min(i + 999, #fields)))
    for j = 1, #part do expiries[#expiries + 1] = part[j] end
  end
end
for i = 1, #fields do
  local expiry, value = expiries[i], values[i]
  if not h.native then expiry, value = value_decode(h.meta.base, value) end
  if expiry == -1 or expiry > now then
    reply[#reply + 1] = fields[i]
    reply[#reply + 1] = value
    reply[#reply + 1] = expiry < 0 and NO_TTL or expiry - now
  end
end
return reply

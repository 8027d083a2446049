-- Read one live field and its remaining ttl (read-only: an expired field is skipped, not removed).
-- KEYS[1]  hash  the hash
-- KEYS[2]  index  its bucket index (unused; named so every ExpiringHash script takes the same keys)
-- KEYS[3]  outbox  its armed expiry notifications (unused)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  field: string
-- Returns  a flat array:
--            - value: string | nil  nil (Lua's false) when absent or expired
--            - ttlMs: ms | NO_TTL | ABSENT  ms left (NO_TTL: none; ABSENT: absent or expired;
--                codes: replies.lua)
--- @include "../includes/server-time.lua"
--- @include "replies.lua"
--- @include "hash.lua"
--- @include "fields.lua"

local h = open_hash(KEYS[1], KEYS[2], now_ms(ARGV[1]))
if not h then return { false, ABSENT } end
local expiry, value = read_field(h, ARGV[2])
if value == nil then return { false, ABSENT } end
return { value, expiry < 0 and NO_TTL or math.max(0, expiry - h.now) }

-- Replace a live field's value, keeping its ttl.
-- KEYS[1]  hash  the hash
-- KEYS[2]  index  its bucket index (unused)
-- KEYS[3]  outbox  its armed expiry notifications (hash, same hash slot)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  field: string
-- ARGV[3]  value: string
-- ARGV[4]  hsetex?: '1' | '0'  '1': native writes use HSETEX (see set.lua); else (or absent) HSET
--          then HPEXPIREAT
-- Returns  verdict: CHANGED | NOT_LIVE | PATH_REFUSED  CHANGED if the field was live and now holds
--          the value; PATH_REFUSED when the server cannot take the path hsetex names (or native
--          field expiry for a native hash): nothing written (codes: replies.lua)
--- @include "../includes/server-time.lua"
--- @include "replies.lua"
--- @include "hash.lua"
--- @include "fields.lua"
--- @include "write-field.lua"
--- @include "arm.lua"
--- @include "write-path.lua"

local field, value, N = ARGV[2], ARGV[3], KEYS[3]
local h = open_hash(KEYS[1], KEYS[2], now_ms(ARGV[1]))
if not h then return NOT_LIVE end
if not runs_path(KEYS[1], h.native, ARGV[4] == '1') then return PATH_REFUSED end
local expiry = read_field(h, field)
if expiry == nil then return NOT_LIVE end
write_field(h, field, value, expiry, ARGV[4] == '1')
local notification = armed(N, field, expiry)
if notification then arm(N, h.now, field, expiry, notification.q, value) end
return CHANGED

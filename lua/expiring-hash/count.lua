-- The number of live fields; removes the expired ones it has to look at to know.
-- KEYS[1]  hash  the hash
-- KEYS[2]  index  its bucket index
-- KEYS[3]  outbox  its armed expiry notifications (unused)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- Returns  live: int  live fields
--- @include "../includes/server-time.lua"
--- @include "hash.lua"
--- @include "save.lua"
--- @include "walk.lua"

local h = open_hash(KEYS[1], KEYS[2], now_ms(ARGV[1]))
if not h then return 0 end
if h.compact then return h.compact.expiry > h.now and 1 or 0 end
local live = live_count(h)
if live == 0 and drop_if_empty(h) then return 0 end
save_hash(h)
return live

-- Renew the leases of messages whose handlers still run, so no other consumer takes them.
-- KEYS[1]    scheduled  (unused)
-- KEYS[2]    inFlight  zset: id -> lease deadline ms
-- KEYS[3]    dead  (unused)
-- KEYS[4]    data
-- ARGV[1]    now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]    visibilityMs: ms  visibility timeout: each lease now runs until now + this
-- ARGV[3..]  leases[]  pairs:
--              - id: string
--              - token: int  the lease token of the claim that holds it
-- Returns    lost[]: string  the ids whose claim no longer holds them (acknowledged, failed, or
--            handed on after the lease ran out): those are not renewed
--- @include "../includes/server-time.lua"
--- @include "lease.lua"

local deadline = now_ms(ARGV[1]) + tonumber(ARGV[2])
local lost = {}
for i = 3, #ARGV, 2 do
  local id = ARGV[i]
  if holds_lease(KEYS[2], KEYS[4], id, ARGV[i + 1]) then
    redis.call('ZADD', KEYS[2], deadline, id)
  else
    lost[#lost + 1] = id
  end
end
return lost

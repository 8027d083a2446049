-- Return leased hashes to the sweep registry with their next sweep time.
-- KEYS[1]  one shard of the sweep registry
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  the lease score registry-claim.lua returned
-- ARGV[3]  ms after which a held hash the sweep found without work is looked at once more
-- ARGV[4..] triples: user key, next sweep time in ms (NOTHING_DUE: no work left), HELD if it was
--          held else NOT_HELD (codes: replies.lua)
-- Returns  the shard's earliest due time after the release (ms; a lease: its deadline), or
--          NOTHING_DUE
--- @include "../includes/server-time.lua"
--- @include "replies.lua"
--- @include "registry.lua"

local lease = tonumber(ARGV[2])
local recheck_at
for i = 4, #ARGV, 3 do
  local member, nxt, held = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]) == HELD
  local score = tonumber(rcall('ZSCORE', KEYS[1], member))
  if score == lease then
    if nxt ~= NOTHING_DUE then
      rcall('ZADD', KEYS[1], nxt, member)
    elseif held then
      -- a write registered before this sweep may land after it: look once more
      recheck_at = recheck_at or now_ms(ARGV[1]) + tonumber(ARGV[3])
      rcall('ZADD', KEYS[1], recheck_at, member)
    else
      rcall('ZREM', KEYS[1], member)
    end
  elseif nxt ~= NOTHING_DUE and (not score or nxt < score) then
    -- registered anew while we swept: keep the earlier time
    rcall('ZADD', KEYS[1], nxt, member)
  end
end
return earliest(KEYS[1])

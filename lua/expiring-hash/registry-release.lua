-- Return leased hashes to the sweep registry with their next sweep time.
-- KEYS[1]    index  one shard's registry index (registry.lua)
-- KEYS[2]    legacy  the shard's registry as 0.1 kept it
-- ARGV[1]    now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]    lease: int  the lease score registry-claim.lua returned
-- ARGV[3]    recheckMs: ms  ms after which a held hash the sweep found without work is looked at
--            once more
-- ARGV[4]    buckets: string  the shard's bucket key stem (registry.lua)
-- ARGV[5..]  hashes[]  four per hash (codes: replies.lua):
--              - key: string  the user key
--              - bucket: string  the bucket it was claimed from
--              - next: ms | NOTHING_DUE  next sweep time (NOTHING_DUE: no work left)
--              - held: HELD | NOT_HELD  HELD if it was held
-- Returns    next: ms | NOTHING_DUE  the shard's earliest time anything needs a look after the
--            release (a lease: its deadline), or NOTHING_DUE
--- @include "../includes/server-time.lua"
--- @include "replies.lua"
--- @include "registry.lua"

local r = registry_of(KEYS[1], ARGV[4], KEYS[2])
local lease = tonumber(ARGV[2])
local recheck_at
for i = 5, #ARGV, 4 do
  local member, name, nxt = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local held = tonumber(ARGV[i + 3]) == HELD
  local b = bucket(r, name)
  local score = tonumber(rcall('ZSCORE', b, member))
  if score == lease then
    rcall('ZREM', b, member)
    r.touched[name] = true
    if nxt ~= NOTHING_DUE then
      list_in(r, place(r, member, nxt), member, nxt)
    elseif held then
      -- a write registered before this sweep may land after it: look once more
      recheck_at = recheck_at or now_ms(ARGV[1]) + tonumber(ARGV[3])
      list_in(r, place(r, member, recheck_at), member, recheck_at)
    end
  elseif nxt ~= NOTHING_DUE and (not score or nxt < score) then
    -- registered anew while we swept: keep the earlier time
    list_in(r, place(r, member, nxt), member, nxt)
  end
end
reindex(r)
return shard_earliest(r)

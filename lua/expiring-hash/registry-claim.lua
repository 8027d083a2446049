-- Lease the hashes that are due for a sweep, so no two sweepers work on one hash at once.
-- A leased member's score is LEASED + its lease deadline: above every due time, so a
-- registration made meanwhile (registry-add.lua) always lowers it and the release can tell.
-- KEYS[1]  index  one shard's registry index (registry.lua)
-- KEYS[2]  legacy  the shard's registry as 0.1 kept it (read as one more bucket)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  count: int  at most this many hashes
-- ARGV[3]  leaseMs: ms  an unreleased lease (its sweeper died) can be claimed again after it
-- ARGV[4]  buckets: string  the shard's bucket key stem (registry.lua)
-- Returns  a flat array (codes: replies.lua):
--            - lease: int  the lease score
--            - now: ms
--            - next: ms | NOTHING_DUE  the shard's earliest time anything needs a look after
--                this claim (a lease: its deadline; NOTHING_DUE: none)
--            - hashes[]  three per hash:
--                - key: string  the user key
--                - bucket: string  its bucket's name (registry.lua)
--                - held: HELD | NOT_HELD  HELD if it was held (registry.lua)
--- @include "../includes/server-time.lua"
--- @include "replies.lua"
--- @include "registry.lua"

local r = registry_of(KEYS[1], ARGV[4], KEYS[2])
local now = now_ms(ARGV[1])
local left = tonumber(ARGV[2])
local lease = LEASED + now + tonumber(ARGV[3])
local reply = { int(lease), int(now), 0 }

-- 0.1's registry drains through the index like any bucket
if rcall('ZCARD', r.legacy) > 0 or rcall('ZSCORE', r.index, '') then r.touched[''] = true end
reindex(r)

local names = rcall('ZRANGEBYSCORE', r.index, '-inf', now, 'LIMIT', 0, left)
for _, name in ipairs(names) do
  if left == 0 then break end
  local b = bucket(r, name)
  local found = rcall('ZRANGEBYSCORE', b, '-inf', now, 'WITHSCORES', 'LIMIT', 0, left)
  if #found < left * 2 then
    -- leases whose sweeper died
    local stale = rcall('ZRANGEBYSCORE', b, LEASED, LEASED + now, 'WITHSCORES', 'LIMIT', 0, left - #found / 2)
    for i = 1, #stale do found[#found + 1] = stale[i] end
  end
  for i = 1, #found, 2 do
    local score = tonumber(found[i + 1])
    rcall('ZADD', b, lease, found[i])
    reply[#reply + 1] = found[i]
    reply[#reply + 1] = name
    reply[#reply + 1] = (score < LEASED and score ~= math.floor(score)) and HELD or NOT_HELD
  end
  left = left - #found / 2
  r.touched[name] = true
end
reindex(r)
reply[3] = shard_earliest(r)
return reply

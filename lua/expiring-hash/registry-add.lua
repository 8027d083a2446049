-- Register a hash with the sweep registry: it has work at `at` or later. Wakes the sweepers when
-- `at` is earlier than anything the shard held, so they can sleep until the earliest due time.
-- KEYS[1]  index  one shard's registry index (registry.lua)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  member: string  the user key
-- ARGV[3]  at: ms = ''  when the hash has work, or '' for now + aheadMs
-- ARGV[4]  aheadMs: ms = ''  ms from now (when at is '')
-- ARGV[5]  hold: '1' | '0'  '1' when a write follows this call (its expiry notification depends
--          on the registry): an earlier time already listed is then held, so a sweep in between
--          cannot forget it
-- ARGV[6]  wakeChannel: string  told `at` when it becomes the shard's earliest
-- ARGV[7]  publish: 'PUBLISH' | 'SPUBLISH'  SPUBLISH on a cluster (the channel shares the
--          shard's slot)
-- ARGV[8]  buckets: string  the shard's bucket key stem (registry.lua)
-- Returns  woke: WOKE | NOT_WOKE  WOKE when `at` became the shard's earliest (a wake-up was
--          published) (codes: replies.lua)
--- @include "../includes/server-time.lua"
--- @include "replies.lua"
--- @include "registry.lua"

local r = registry_of(KEYS[1], ARGV[8])
local member = ARGV[2]
local at = ARGV[3] ~= '' and tonumber(ARGV[3]) or now_ms(ARGV[1]) + tonumber(ARGV[4])
-- read before any write: a shard that is not a sorted set fails the call with nothing written
local head = shard_earliest(r)
local name = place(r, member, at)
if ARGV[5] == '1' then
  local score = tonumber(rcall('ZSCORE', bucket(r, name), member))
  if score and score <= at then
    if score == math.floor(score) then list_in(r, name, member, score - 0.5) end
    return NOT_WOKE
  end
end
list_in(r, name, member, at)
if head ~= NOTHING_DUE and head <= at then return NOT_WOKE end
rcall(ARGV[7], ARGV[6], int(at))
return WOKE

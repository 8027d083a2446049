-- A handler of a consumer with concurrencyPerKey ended: its slot frees, and the key's longest
-- waiting message (admit.lua) is due at once, so that a waiting message starts as soon as a slot
-- allows rather than when its wait runs out.
-- KEYS[1]   scheduled
-- KEYS[2]   slots  the concurrency key's slots (admit.lua)
-- KEYS[3]   waiting  the concurrency key's waiting messages (admit.lua)
-- ARGV[1]   now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]   id: string  the message whose handler ended
-- ARGV[3]   token: int  the lease token of the claim whose handler ended: a slot another claim
--           of the id holds now stays
-- Returns   woken: int  1 when a waiting message is due now, else 0
--- @include "../includes/server-time.lua"

local rcall = redis.call
if rcall('HGET', KEYS[2], ARGV[2]) == ARGV[3] then rcall('HDEL', KEYS[2], ARGV[2]) end
local now = now_ms(ARGV[1])
-- an entry whose message is no longer back as it left it (acknowledged since, cancelled, or
-- scheduled anew) is dropped: a few per call at most, so the call stays short
for _ = 1, 16 do
  -- (ZRANGE and ZREM rather than ZPOPMIN: the ACL docs/cluster-and-security.md gives needs no more)
  local first = rcall('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  if not first[1] then return 0 end
  rcall('ZREM', KEYS[3], first[1])
  local due = rcall('ZSCORE', KEYS[1], first[1])
  if due and tonumber(due) == tonumber(first[2]) then
    if tonumber(due) > now then rcall('ZADD', KEYS[1], int(now), first[1]) end
    return 1
  end
end
return 0

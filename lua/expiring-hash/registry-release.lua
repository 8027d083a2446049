-- Return leased hashes to the sweep registry with their next sweep time.
-- KEYS[1]  one shard of the sweep registry
-- ARGV[1]  the lease score registry-claim.lua returned
-- ARGV[2..] pairs: user key, next sweep time in ms (-1: forget the hash)
-- Returns  the number of pairs
local rcall = redis.call
local lease = tonumber(ARGV[1])
for i = 2, #ARGV, 2 do
  local member, nxt = ARGV[i], tonumber(ARGV[i + 1])
  local score = tonumber(rcall('ZSCORE', KEYS[1], member))
  if score == lease then
    if nxt < 0 then rcall('ZREM', KEYS[1], member) else rcall('ZADD', KEYS[1], nxt, member) end
  elseif nxt >= 0 and (not score or nxt < score) then
    -- registered anew while we swept: keep the earlier time
    rcall('ZADD', KEYS[1], nxt, member)
  end
end
return (#ARGV - 1) / 2

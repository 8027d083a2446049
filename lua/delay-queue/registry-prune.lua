-- Forget queues that were found empty, unless one was registered again since the cutoff.
-- Registrations refresh a queue's score (ZADD) far more often than the cutoff's age, so a score
-- that old means nobody enqueued or consumed there lately, and emptiness seen just before holds.
-- KEYS[1]    registry  the queue registry (zset: queue name -> ms it was last registered)
-- ARGV[1]    cutoff: ms  only names registered before it go
-- ARGV[2..]  names[]: string  queue names found empty
-- Returns    forgotten: int  how many were forgotten
local rcall = redis.call
local cutoff = tonumber(ARGV[1])
local gone = 0
for i = 2, #ARGV do
  local score = rcall('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) < cutoff then gone = gone + rcall('ZREM', KEYS[1], ARGV[i]) end
end
return gone

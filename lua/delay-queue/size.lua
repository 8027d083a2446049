-- How many messages are scheduled, in flight and dead; and, when asked, how many of the scheduled
-- are overdue: due longer ago than overdueAfterMs and still not claimed (no consumer keeps up).
-- KEYS[1]  scheduled  zset: id -> runAt ms
-- KEYS[2]  inFlight  in flight
-- KEYS[3]  dead
-- KEYS[4]  data  (unused)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  overdueAfterMs: ms = ''  '' when not asked
-- Returns  a flat array:
--            - scheduled: int
--            - inFlight: int
--            - dead: int
--            - overdue: int  scheduled with runAt before now - overdueAfterMs; -1 when not asked
--- @include "../includes/server-time.lua"

local overdue = -1
if ARGV[2] ~= '' then
  overdue = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. int(now_ms(ARGV[1]) - tonumber(ARGV[2])))
end
return { redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3]), overdue }

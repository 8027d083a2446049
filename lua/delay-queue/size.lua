-- How many messages are scheduled, in flight and dead.
-- KEYS[1]  scheduled
-- KEYS[2]  inFlight  in flight
-- KEYS[3]  dead
-- KEYS[4]  data  (unused)
-- Returns  a flat array:
--            - scheduled: int
--            - inFlight: int
--            - dead: int
return { redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3]) }

-- How many messages are scheduled, in flight and dead.
-- KEYS[1]  scheduled
-- KEYS[2]  in flight
-- KEYS[3]  dead
-- KEYS[4]  data (unused)
-- Returns  { scheduled, in flight, dead }
return { redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3]) }

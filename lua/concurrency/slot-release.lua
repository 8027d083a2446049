-- Give a concurrency slot back (its holder ended); a slot already gone changes nothing.
-- KEYS[1]  slots  zset: slot id -> lease end (ms)
-- ARGV[1]  id: string
-- Returns  released: int  1 when the slot was held, else 0
return redis.call('ZREM', KEYS[1], ARGV[1])

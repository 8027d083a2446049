-- The secret that authenticates grant ids (see lib/rate-limit/grant-ids.ts): made once by the
-- first process that asks, read by every other, so all instances on one Redis and key prefix
-- sign and check alike. It never expires: a lost secret only makes older grant ids refund 0.
-- KEYS[1]     secret  the secret's key
-- ARGV[1]     fresh: string  a fresh random secret (hex), stored only if none is there yet
-- Returns     secret: string  the secret in force
local secret = redis.call('GET', KEYS[1])
if secret then return secret end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]

-- The expiry notification armed for `field` at `expiry`, once it is due.
-- KEYS[1]  the hash (unused)
-- KEYS[2]  its bucket index (unused)
-- KEYS[3]  its armed expiry notifications
-- ARGV[1]  now in ms, or '' to use the Redis server clock
-- ARGV[2]  field
-- ARGV[3]  the expiry the notification was armed for (ms)
-- ARGV[4]  'peek' to read it, 'done' to remove it once delivered
-- Returns  peek: { queue, value } when armed and due, else false (deleted or re-set before it
--          expired, or already delivered); done: 1
--- @include "../includes/server-time.lua"

local name = ARGV[3] .. ':' .. ARGV[2]
if ARGV[4] == 'done' then
  redis.call('HDEL', KEYS[3], name)
  return 1
end
if tonumber(ARGV[3]) > now_ms(ARGV[1]) then return false end
local raw = redis.call('HGET', KEYS[3], name)
if not raw then return false end
local notification = cjson.decode(raw)
return { notification.q, notification.v }

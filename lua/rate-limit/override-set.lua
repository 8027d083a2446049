-- Store a runtime override (RateLimiterService.setOverride), lapsing `ttlMs` from now on the
-- server's clock when given: every instance judges the lapse by the same clock.
-- KEYS[1]  overrides  hash: the per-name or the per-key overrides (override-read.lua)
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  field: string  the name, or the JSON [name, key]
-- ARGV[3]  limit: int
-- ARGV[4]  windowMs: ms = ''  '' when each limit keeps its own window
-- ARGV[5]  ttlMs: ms = ''  '' when it never lapses
-- Returns  expiresAt: ms  when it lapses, or -1 when it never does
--- @include "../includes/server-time.lua"

local value = '{"limit":' .. ARGV[3]
if ARGV[4] ~= '' then value = value .. ',"windowMs":' .. ARGV[4] end
local expires = -1
if ARGV[5] ~= '' then
  expires = now_ms(ARGV[1]) + tonumber(ARGV[5])
  value = value .. ',"expiresAt":' .. int(expires)
end
redis.call('HSET', KEYS[1], ARGV[2], value .. '}')
return expires

-- Every runtime override stored, with the ms each has left. Those that have lapsed are deleted
-- here, so per-key overrides given a ttl do not pile up (Redis 7.0 has no per-field expiry).
-- KEYS[1]  byName  hash: limit name -> override, JSON { limit, windowMs?, expiresAt? } (ms)
-- KEYS[2]  byKey  hash: JSON [name, key] -> override, as above
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- Returns  entries[]  four per override in force:
--            - keyed: int  1 when from byKey, else 0
--            - field: string
--            - value: string  as stored (each instance checks it: it may be written by hand)
--            - ttlMs: ms  ms left; -1 when it never lapses
--- @include "../includes/server-time.lua"

local rcall = redis.call
local now = now_ms(ARGV[1])
local reply = {}
local function read(hash, keyed)
  local all = rcall('HGETALL', hash)
  for i = 1, #all, 2 do
    local ok, parsed = pcall(cjson.decode, all[i + 1])
    local expires = ok and type(parsed) == 'table' and tonumber(parsed.expiresAt) or nil
    if expires and expires <= now then
      rcall('HDEL', hash, all[i])
    else
      reply[#reply + 1] = keyed
      reply[#reply + 1] = all[i]
      reply[#reply + 1] = all[i + 1]
      reply[#reply + 1] = expires and expires - now or -1
    end
  end
end
read(KEYS[1], 0)
read(KEYS[2], 1)
return reply

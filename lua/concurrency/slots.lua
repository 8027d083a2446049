-- Take, renew and give back concurrency slots. A key's slots are a sorted set of slot ids scored
-- by the time their lease ends: a holder renews its lease while it runs, and the slots of one
-- that died (its leases ended unrenewed) are dropped when the key is next acquired, which gives
-- them back. One call carries the operations made in one turn of the event loop (on a cluster,
-- those of one hash slot), so a busy app pays one round trip and one script start for many; each
-- operation is atomic on its own, and one that fails (e.g. WRONGTYPE on a key someone else wrote)
-- fails alone.
-- KEYS[1..]  slots[]  one sorted set per operation (slot id -> lease end, ms), in ARGV order
-- ARGV[1]    now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2..]  ops[]  four per operation:
--              - op: 'a' | 'n' | 'r'  acquire, renew, release
--              - id: string  the slot's id
--              - limit: int  acquire: slots held at most (else ignored)
--              - leaseMs: ms  acquire, renew: how long the slot lasts unless renewed (else ignored)
-- Returns    results[]  four per operation, in ARGV order:
--              - done: int  1 when taken, renewed or released; 0 when refused (acquire: `limit`
--                  are held), gone (renew: its lease had ended and the slot was given back, so
--                  its holder runs over the limit) or already gone (release); -1 when it failed
--              - held: int  acquire: slots held after it (this one included when taken); else 0
--              - retryAfterMs: ms  a refused acquire: until the soonest lease ends; else 0
--              - error: string  the error text when it failed, else ''
--- @include "../includes/server-time.lua"

local rcall = redis.call
local now = now_ms(ARGV[1])

-- The set lasts as long as its longest lease: a set that held none is new (emptied, the server
-- removed it) and gets its expiry; one already held gets a later one only (GT: one command where
-- reading the expiry first took two).
local function extend(key, ends, new)
  if new then
    rcall('PEXPIRE', key, int(ends - now))
  else
    rcall('PEXPIRE', key, int(ends - now), 'GT')
  end
end

local function acquire(key, id, limit, leaseMs)
  rcall('ZREMRANGEBYSCORE', key, '-inf', now)
  local held = rcall('ZCARD', key)
  if held >= limit then
    local soonest = rcall('ZRANGE', key, 0, 0, 'WITHSCORES')
    return 0, held, tonumber(soonest[2]) - now
  end
  local ends = now + leaseMs
  rcall('ZADD', key, ends, id)
  extend(key, ends, held == 0)
  return 1, held + 1, 0
end

local function renew(key, id, leaseMs)
  if not rcall('ZSCORE', key, id) then return 0, 0, 0 end
  local ends = now + leaseMs
  rcall('ZADD', key, ends, id)
  extend(key, ends, false)
  return 1, 0, 0
end

local function run(key, op, id, limit, leaseMs)
  if op == 'a' then return acquire(key, id, tonumber(limit), tonumber(leaseMs)) end
  if op == 'n' then return renew(key, id, tonumber(leaseMs)) end
  return rcall('ZREM', key, id), 0, 0
end

local reply, n = {}, 0
for i = 1, #KEYS do
  local a = 2 + (i - 1) * 4
  local ok, done, held, retry = pcall(run, KEYS[i], ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3])
  if ok then
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4] = done, held, retry, ''
  else
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4] = -1, 0, 0, type(done) == 'table' and (done.err or 'error') or tostring(done)
  end
  n = n + 4
end
return reply

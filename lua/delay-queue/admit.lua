-- Admit claimed messages past a consumer's rate limit: each is charged to its key's counter and
-- its handler may start, or, over the limit, it goes back to the scheduled set, due when its key
-- allows, and the claim that took it is counted as no attempt ('d:'..id; it never dies of
-- waiting). Either way the claim's pending mark ('u:'..id, see claim.lua) goes.
-- KEYS[1]     scheduled
-- KEYS[2]     inFlight  in flight
-- KEYS[3]     dead  (unused)
-- KEYS[4]     data
-- KEYS[5..]   rates[]  two per message, in ARGV order, all in the queue's hash slot (a key may
--             repeat):
--               - counter  the counter of its rate key
--               - pace  that key's pace (hash { d = the due time last given to one of its refused
--                 messages, p = the end of a pause a handler asked for (retry-later.lua), l and
--                 t = its adaptive limit (adaptive.lua) })
-- ARGV[1]     now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]     algorithm: 'fw' | 'sw' | 'sc' | 'tb'
-- ARGV[3]     limit: int  starts per window
-- ARGV[4]     windowMs: ms
-- ARGV[5]     adaptive: '0' | '1'  '1': each key's limit is its adaptive one (adaptive.lua), at most
--             `limit`
-- ARGV[6..]   leases[]  pairs, in KEYS order:
--               - id: string
--               - token: int  the lease token of the claim that took it
-- Returns     verdicts[]: ms | ADMITTED | LEASE_LOST  per message: ADMITTED; LEASE_LOST when that
--             claim no longer holds it (nothing charged); else the time it is due again (ms)
--             (codes: replies.lua). A deferral frees a slot of the queue's global concurrency: a
--             consumer waiting for one is woken (free-slot.lua)
-- The counters are the rate limiter's own (see lua/rate-limit): the algorithms are included, not
-- copied. A key paused by a handler refuses every message, uncharged, until the pause ends. A
-- refused message is due windowMs / limit after the key's previous refused one (or when
-- the key allows, if later): a key's backlog comes back at the pace its limit allows, in the
-- order it was refused, each message once, rather than all at once every window. The pace key
-- lasts until the last of those is due, plus a window.
--- @include "replies.lua"
--- @include "../includes/server-time.lua"
--- @include "lease.lua"
--- @include "free-slot.lua"
--- @include "../rate-limit/life.lua"
--- @include "../rate-limit/fixed-window.lua"
--- @include "../rate-limit/sliding-window-counter.lua"
--- @include "../rate-limit/sliding-window.lua"
--- @include "../rate-limit/token-bucket.lua"
--- @include "adaptive.lua"

local rcall = redis.call
local alg = ({ fw = fixed_window, sw = sliding_window, sc = sliding_window_counter, tb = token_bucket })[ARGV[2]]
local configured, windowMs = tonumber(ARGV[3]), tonumber(ARGV[4])
local adaptive = ARGV[5] == '1'
local now = now_ms(ARGV[1])
local reply = {}
local deferred = false
for i = 6, #ARGV, 2 do
  -- message (i - 4) / 2: its lease is ARGV[i], ARGV[i + 1]; its keys KEYS[i - 1], KEYS[i]
  local key, pace_key, id = KEYS[i - 1], KEYS[i], ARGV[i]
  if not holds_lease(KEYS[2], KEYS[4], id, ARGV[i + 1]) then
    reply[#reply + 1] = LEASE_LOST
  else
    local limit = adaptive and adaptive_limit(pace_key, configured, windowMs, now) or configured
    local ok, retry, state = false, nil, nil
    local paused = tonumber(rcall('HGET', pace_key, 'p'))
    if paused and paused > now then
      retry = paused - now
    else
      local granted, _, wait, _, checked = alg.check(key, limit, windowMs, 1, now)
      ok, retry, state = granted, wait, checked
    end
    if ok then
      alg.commit(key, limit, windowMs, 1, now, state)
      rcall('HDEL', KEYS[4], 'u:' .. id)
      reply[#reply + 1] = ADMITTED
    else
      local due = now + math.max(1, retry)
      local last = tonumber(rcall('HGET', pace_key, 'd'))
      local pace = windowMs / limit
      if last and last + pace > due then due = math.ceil(last + pace) end
      rcall('HSET', pace_key, 'd', int(due))
      -- at least until then plus a window (an adaptive limit may keep it longer)
      if rcall('PTTL', pace_key) < due - now + windowMs then rcall('PEXPIRE', pace_key, int(due - now + windowMs)) end
      rcall('ZREM', KEYS[2], id)
      rcall('ZADD', KEYS[1], due, id)
      -- not an attempt; the claim count stays, so that claim's token is never handed out again
      rcall('HDEL', KEYS[4], 'u:' .. id)
      rcall('HINCRBY', KEYS[4], 'd:' .. id, 1)
      deferred = true
      reply[#reply + 1] = due
    end
  end
end
if deferred then free_slot(KEYS[4]) end
return reply

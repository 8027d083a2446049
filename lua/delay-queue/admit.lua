-- Admit claimed messages past a consumer's rate limit and its cap per key: each is charged to its
-- key's counter and takes a slot of its concurrency key, and its handler may start; or, over the
-- limit, it goes back to the scheduled set, due when its key allows; or, with every slot of its
-- key taken, it waits for one: back in the scheduled set, due after parkMs, and listed in the
-- key's waiting set, from which slot-release.lua makes it due at once when a slot frees. Either
-- way back, the claim that took it is counted as no attempt ('d:'..id; it never dies of
-- waiting), and the claim's pending mark ('u:'..id, see claim.lua) goes.
-- KEYS[1]     scheduled
-- KEYS[2]     inFlight  in flight
-- KEYS[3]     dead  (unused)
-- KEYS[4]     data
-- KEYS[5..]   flows[]  five per message, in ARGV order, all in the queue's hash slot (a key may
--             repeat; a row the consumer does not use repeats its pace key, never read as such):
--               - counter  the counter of its rate key
--               - pace  that key's pace (hash { d = the due time last given to one of its refused
--                 messages, p = the end of a pause a handler asked for (retry-later.lua), l, t
--                 and r = its adaptive limit (adaptive.lua) })
--               - slots  its concurrency key's slots (hash { <id> = the lease token of the claim
--                 whose handler holds the slot }): a slot is held while that lease is, so one a
--                 dead consumer held frees when its lease runs out
--               - waiting  its concurrency key's waiting messages (zset: id -> the time it is due
--                 again, which tells this wait from a later schedule of the id)
--               - hold  its concurrency key's pause (hash { p = the end of a pause a handler
--                 asked for })
-- ARGV[1]     now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]     algorithm: 'fw' | 'sw' | 'sc' | 'tb' | '-'  the rate limit's; '-': none
-- ARGV[3]     limit: int  starts per window (with no rate limit: ignored)
-- ARGV[4]     windowMs: ms  (with no rate limit: ignored)
-- ARGV[5]     adaptive: '0' | '1'  '1': each key's limit is its adaptive one (adaptive.lua), at most
--             `limit`
-- ARGV[6]     slots: int  handlers per concurrency key at once; 0: no cap
-- ARGV[7]     parkMs: ms  how long a message waiting for a slot stays back at most (a slot held
--             by a consumer that died frees when its lease runs out, and nothing says so)
-- ARGV[8..]   leases[]  pairs, in KEYS order:
--               - id: string
--               - token: int  the lease token of the claim that took it
-- Returns     verdicts[]: ms | ADMITTED | LEASE_LOST | WAITING  per message: ADMITTED;
--             LEASE_LOST when that claim no longer holds it (nothing charged); WAITING when it
--             waits for a slot; else the time it is due again (ms) (codes: replies.lua). A
--             message given back frees a slot of the queue's global concurrency: a consumer
--             waiting for one is woken (free-slot.lua)
-- The counters are the rate limiter's own (see lua/rate-limit): the algorithms are included, not
-- copied. A key paused by a handler (its rate key's or its concurrency key's) refuses every
-- message, uncharged, until the pause ends. A refused message is due windowMs / limit after the
-- key's previous refused one (or when the key allows, if later): a key's backlog comes back at
-- the pace its limit allows, in the order it was refused, each message once, rather than all at
-- once every window. The pace key lasts until the last of those is due, plus a window. A waiting
-- message leaves the claims' way, so a key with a backlog takes no turn from the others.
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
local rated = ARGV[2] ~= '-'
local alg = rated and ({ fw = fixed_window, sw = sliding_window, sc = sliding_window_counter, tb = token_bucket })[ARGV[2]]
local configured, windowMs = tonumber(ARGV[3]), tonumber(ARGV[4])
local adaptive = ARGV[5] == '1'
local cap, parkMs = tonumber(ARGV[6]), tonumber(ARGV[7])
local now = now_ms(ARGV[1])
local reply = {}
local given_back = false
-- slots held per slots key, counted once per call: the messages admitted here add to it
local held = {}

-- the slots of `slots` still held: a slot whose lease ended (acknowledged, failed, handed on)
-- goes
local function slots_held(slots)
  local count = held[slots]
  if count then return count end
  count = 0
  local all = rcall('HGETALL', slots)
  for j = 1, #all, 2 do
    if holds_lease(KEYS[2], KEYS[4], all[j], all[j + 1]) then count = count + 1 else rcall('HDEL', slots, all[j]) end
  end
  held[slots] = count
  return count
end

-- the message goes back, due at `due`, its claim no attempt; why (a code and the key it waits
-- on, message-fields.lua) is kept for explain
local function give_back(id, due, why, key)
  rcall('ZREM', KEYS[2], id)
  rcall('ZADD', KEYS[1], due, id)
  rcall('HDEL', KEYS[4], 'u:' .. id)
  rcall('HINCRBY', KEYS[4], 'd:' .. id, 1)
  rcall('HSET', KEYS[4], 'y:' .. id, why .. ' ' .. int(due) .. ' ' .. key)
  given_back = true
end

local function pause_of(key)
  local paused = tonumber(rcall('HGET', key, 'p'))
  if paused and paused > now then return paused end
  return nil
end

for i = 8, #ARGV, 2 do
  -- message (i - 8) / 2: its lease is ARGV[i], ARGV[i + 1]; its keys from KEYS[5 + (i - 8) / 2 * 5]
  local k = 5 + (i - 8) / 2 * 5
  local key, pace_key, slots, waiting, hold, id = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], ARGV[i]
  if not holds_lease(KEYS[2], KEYS[4], id, ARGV[i + 1]) then
    reply[#reply + 1] = LEASE_LOST
  else
    local paused = rated and pause_of(pace_key) or nil
    local paused_by = pace_key
    if cap > 0 then
      local held_until = pause_of(hold)
      if held_until and (not paused or held_until > paused) then paused, paused_by = held_until, hold end
    end
    local limit = rated and adaptive and adaptive_limit(pace_key, configured, windowMs, now) or configured
    local ok, retry, state = true, 0, nil
    if paused then
      ok, retry = false, paused - now
    elseif cap > 0 and slots_held(slots) >= cap then
      -- every slot taken: it waits, out of the claims' way, until one frees (or parkMs passes)
      local due = now + parkMs
      give_back(id, due, 'c', slots)
      rcall('ZADD', waiting, due, id)
      if rcall('PTTL', waiting) < parkMs then rcall('PEXPIRE', waiting, int(parkMs)) end
      reply[#reply + 1] = WAITING
      ok = nil
    elseif rated then
      local granted, _, wait, _, checked = alg.check(key, limit, windowMs, 1, now)
      ok, retry, state = granted, wait, checked
    end
    if ok then
      if rated then alg.commit(key, limit, windowMs, 1, now, state) end
      if cap > 0 then
        rcall('HSET', slots, id, ARGV[i + 1])
        rcall('ZREM', waiting, id)
        held[slots] = held[slots] + 1
      end
      rcall('HDEL', KEYS[4], 'u:' .. id)
      reply[#reply + 1] = ADMITTED
    elseif ok == false then
      local due = now + math.max(1, retry)
      if rated then
        local last = tonumber(rcall('HGET', pace_key, 'd'))
        local pace = windowMs / limit
        if last and last + pace > due then due = math.ceil(last + pace) end
        rcall('HSET', pace_key, 'd', int(due))
        -- at least until then plus a window (an adaptive limit may keep it longer)
        if rcall('PTTL', pace_key) < due - now + windowMs then rcall('PEXPIRE', pace_key, int(due - now + windowMs)) end
      end
      -- not an attempt; the claim count stays, so that claim's token is never handed out again
      if paused then give_back(id, due, 'p', paused_by) else give_back(id, due, 'r', key) end
      reply[#reply + 1] = due
    end
  end
end
if given_back then free_slot(KEYS[4]) end
return reply

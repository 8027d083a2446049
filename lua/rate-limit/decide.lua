-- Decide stacks of rate limits: each stack in one atomic step, every limit of it grants or none
-- is charged. One call carries one stack or a batch of independent stacks (calls made in the same
-- turn of the event loop), so N decisions cost one round trip and one script start, not N.
-- KEYS[1..]   states[]  one state key per limit, stacks in ARGV order; on a cluster all in one
--             hash slot
-- ARGV[1]     now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2..]   specs[#]  the limits the stacks decide, each sent once however many stacks name it
--             (a batch mostly repeats a few), four per limit:
--               - algorithm: 'fw' | 'sw' | 'sc' | 'tb'
--               - limit: int  permits
--               - windowMs: ms
--               - permits: int  permits to charge
-- ARGV[3..]   stacks[*]  per stack, in runs (a batch mostly repeats one shape: stacks alike one
--             after another go once, after how many they are, and cost one value each, their key):
--               - consume: '1' | '0'  '1' to consume, '0' to peek (inspect without charging)
--               - limits[#]: int  its limits, each by its number in specs (from 1)
-- Returns     packed  one string (see PACKED in scripts/script-headers.mjs: decoding an array of
--             values cost the client more than anything else of a decision; and each byte of it
--             costs the script, so a value the client knows or can make is not in it):
--               - now: ms  the call's clock (a token bucket's grant ids carry it)
--               - stacks[]  per stack of ARGV, one of (codes: replies.lua):
--                   - decided:
--                       - verdict: GRANTED | REFUSED
--                       - limits[]  as in ARGV, one of:
--                           - granted, nothing charged (a peek, or a stack refused):
--                               - verdict: GRANTED
--                               - remaining: int  permits
--                               - resetMs: ms  until the limit is full again
--                           - granted and charged:
--                               - verdict: CHARGED
--                               - remaining: int  permits
--                               - resetMs: ms  until the limit is full again
--                               - lifeAt: int  the counter's life: its µs (see life_at in life.lua)
--                               - lifeNumber: int  and its number
--                               - given: int  what refunds gave back in this life (0: nothing)
--                               - grant: int  with the life, the call's clock and the permits,
--                                   names the grant: the client writes out the id refund.lua takes
--                                   back (lib/rate-limit/grant-text.ts; see each algorithm's commit)
--                           - refused:
--                               - verdict: REFUSED | BLOCKED  BLOCKED: refused while a block is in
--                                   force
--                               - remaining: int  permits
--                               - retryAfterMs: ms
--                               - resetMs: ms  until the limit is full again
--                   - failed, when the stack's Redis call failed (other stacks of the batch are
--                     not affected):
--                       - verdict: STACK_FAILED
--                       - error: string  the error text (its first 65,535 bytes)
-- Each algorithm is a table of functions returning plain values (see its include): a table or
-- closure per decision would cost more here than the decision's own Redis calls.
--- @include "replies.lua"
--- @include "../includes/server-time.lua"
--- @include "life.lua"
--- @include "fixed-window.lua"
--- @include "sliding-window-counter.lua"
--- @include "sliding-window.lua"
--- @include "token-bucket.lua"

local algorithms = { fw = fixed_window, sw = sliding_window, sc = sliding_window_counter, tb = token_bucket }
local now = now_ms(ARGV[1])
local reply, n = { struct.pack('>d', now) }, 1

-- the specs, by their number as sent: { algorithm, limit, windowMs, permits }, read once per call
local specs, a = {}, 3
for i = 1, tonumber(ARGV[2]) do
  specs[tostring(i)] = { algorithms[ARGV[a]], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]) }
  a = a + 4
end

-- A stack of one limit (most are): its verdict goes straight into `reply`, no scratch tables; a
-- consume checks and charges in one step of its algorithm (consume), reading the state once.
local function decide_one(consume, key, spec)
  local alg, limit, windowMs, permits = spec[1], spec[2], spec[3], spec[4]
  blocked_refusal = false
  n = n + 1
  if consume then
    -- granted: remaining, reset, then the grant's parts; refused: remaining, retry, reset
    local ok, remaining, x, y, grant, number, given = alg.consume(key, limit, windowMs, permits, now)
    if ok then
      reply[n] = struct.pack('>bbdddddd', GRANTED, CHARGED, remaining, x, y, number, given, grant)
    else
      reply[n] = struct.pack('>bbddd', REFUSED, blocked_refusal and BLOCKED or REFUSED, remaining, x, y)
    end
    return
  end
  local ok, remaining, retry, reset = alg.check(key, limit, windowMs, permits, now)
  if ok then
    reply[n] = struct.pack('>bbdd', GRANTED, GRANTED, remaining, reset)
  else
    reply[n] = struct.pack('>bbddd', REFUSED, blocked_refusal and BLOCKED or REFUSED, remaining, retry, reset)
  end
end

-- A stack of m limits whose first key is KEYS[k] and whose first spec number is ARGV[at]: every
-- limit is checked before any is charged.
local function decide_stack(consume, m, k, at)
  local spec, ok, remaining, retry, reset, state, blocked = {}, {}, {}, {}, {}, {}, {}
  local allowed = true
  for i = 1, m do
    spec[i] = specs[ARGV[at + i - 1]]
    local s = spec[i]
    blocked_refusal = false
    ok[i], remaining[i], retry[i], reset[i], state[i] = s[1].check(KEYS[k + i - 1], s[2], s[3], s[4], now)
    blocked[i] = blocked_refusal
    allowed = allowed and ok[i]
  end
  local commit = allowed and consume
  n = n + 1
  reply[n] = struct.pack('>b', allowed and GRANTED or REFUSED)
  for i = 1, m do
    n = n + 1
    if ok[i] then
      if commit then
        local s = spec[i]
        local r, reset_ms, life, grant, number, given = s[1].commit(KEYS[k + i - 1], s[2], s[3], s[4], now, state[i])
        reply[n] = struct.pack('>bdddddd', CHARGED, r, reset_ms, life, number, given, grant)
      else
        reply[n] = struct.pack('>bdd', GRANTED, remaining[i], reset[i])
      end
    else
      reply[n] = struct.pack('>bddd', blocked[i] and BLOCKED or REFUSED, remaining[i], retry[i], reset[i])
    end
  end
end

-- a lone stack's error is the call's error; in a batch each stack is protected from the others'
local last = #ARGV
local lone = ARGV[a] == '1' and a + 3 + tonumber(ARGV[a + 2]) > last
local k = 1
while a <= last do
  -- a run: `times` stacks alike. (Most stacks hold one limit: its count is read without
  -- tonumber, its spec looked up once, and decide_one called as is.)
  local times, consume, count = tonumber(ARGV[a]), ARGV[a + 1] == '1', ARGV[a + 2]
  local m = count == '1' and 1 or tonumber(count)
  local spec = m == 1 and specs[ARGV[a + 3]]
  if lone then
    if m == 1 then decide_one(consume, KEYS[k], spec) else decide_stack(consume, m, k, a + 3) end
  else
    for _ = 1, times do
      local mark = n
      -- a failing call (e.g. WRONGTYPE on a key someone else wrote) fails its own stack only
      local done, err
      if m == 1 then
        done, err = pcall(decide_one, consume, KEYS[k], spec)
      else
        done, err = pcall(decide_stack, consume, m, k, a + 3)
      end
      if not done then
        for i = mark + 1, n do reply[i] = nil end
        local text = string.sub(type(err) == 'table' and (err.err or 'error') or tostring(err), 1, 65535)
        n = mark + 1
        reply[n] = struct.pack('>bHc0', STACK_FAILED, #text, text)
      end
      k = k + m
    end
  end
  a = a + 3 + m
end
return table.concat(reply, '', 1, n)

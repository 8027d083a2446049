-- Include: exact sliding-window limiter. A grant of p permits at t counts against every request
-- before t + windowMs, so no span of windowMs ever holds more than `limit` permits.
-- State: one sorted set per counter, whose cost grows with grants, never with permits:
--   grants   member '<seq>:<permits>:<total>', scored by grant time (ms >= 0). <seq> numbers the
--            life's grants, written as a letter for its digit count then the digits ('a7',
--            'b12'), so grants with one score sort by seq; a grant's time is never before the
--            newest grant's, so rank order is grant order. <total> is the permits the key's grants
--            hold up to this one, so the live permits from grant i to grant j are total(j) -
--            total(i) + permits(i), and the grants a refused request waits for are found by
--            binary search, not by walking them. A grant refunded in part holds what it has
--            left: the member is its own refund ledger. A whole refund removes it, except the
--            newest grant's, which stays holding 0 (the next seq follows it) until the next grant
--            takes its place: at most one such member, always the newest
--   counter  member '#<life id>' (see life.lua), with '!<ms>' after it while a block lasts until
--            then, scored -1 - (permits the live grants hold): always the lowest score, so
--            ZRANGE 0 1 reads it with the oldest grant. Its name changes only with a new life or
--            a block, so a grant rewrites its score in the ZADD that adds the grant
-- Grants that aged out are left for the next write (a grant or a refund) to remove: a check
-- counts without them, so a refusal writes nothing. The next seq is the newest grant's plus one;
-- with no grants left the life ends, and the next grant starts a new one at seq 1. The key
-- expires windowMs after the last grant (or when the block ends, if later).
-- A decision that grants makes four calls (one read of the counter with the oldest grant, one of
-- the newest grant, one ZADD, one PEXPIRE), plus two when grants aged out.
-- sliding_window.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, state
--   (reset is nil when it takes a lookup that only an uncommitted decision needs: see .reset;
--   while blocked, refused with remaining 0 and retry the longer of the block and its own wait)
-- sliding_window.commit(key, limit, windowMs, permits, now, state) -> remaining, reset, grant id
--   ('<life>:<seq>'); charges even past the limit (penalize)
-- sliding_window.reset(key, windowMs, now) -> ms until the newest grant holding permits ages out
-- sliding_window.refund(key, limit, windowMs, permits, now, grant) -> permits given back (0 when the
--   grant is unknown, already refunded or aged out); a grant refunded in part keeps the rest
-- sliding_window.block(key, limit, windowMs, now, untilMs) -> refuses until untilMs (a longer
--   block stays)
local sliding_window = {}

-- members rewritten per call when a refund renumbers totals: bounds the reply held at once
local SW_CHUNK = 256
local SW_COUNTER = 35 -- string.byte('#')

local function sw_seq(n)
  local digits = int(n)
  return string.char(96 + #digits) .. digits
end

-- a grant member's permits and total
local function sw_grant(member)
  local permits, total = string.match(member, ':(%d+):(%d+)$')
  return tonumber(permits), tonumber(total)
end

-- the total of the grant at `rank`
local function sw_total(key, rank)
  return select(2, sw_grant(redis.call('ZRANGE', key, rank, rank)[1]))
end

-- a counter member's life id (nil for the '#<seq>.<life>' counter of 0.2, whose seqs were its own)
local function sw_life(counter)
  return string.match(counter, '^#(%d+)!?%d*$')
end

-- the end of a counter member's block, if it has one (it may be over)
local function sw_blocked(counter)
  return tonumber(string.match(counter, '!(%d+)$'))
end

-- the counter member, the permits the live grants hold, whether aged-out grants are still
-- stored, and the total before the oldest live grant (nil: no grants)
local function sw_state(key, windowMs, now)
  local head = redis.call('ZRANGE', key, 0, 1, 'WITHSCORES')
  local counter, oldest = head[1], head[3]
  if not counter or string.byte(counter) ~= SW_COUNTER then return nil, 0, false, nil end
  local used = -1 - tonumber(head[2])
  if not oldest then return counter, used, false, nil end
  local permits, total = sw_grant(oldest)
  local cutoff = now - windowMs
  if tonumber(head[4]) > cutoff then return counter, used, false, total - permits end
  -- the aged-out grants are the oldest ones: their permits are two totals apart
  local last = redis.call('ZRANGE', key, cutoff, 0, 'BYSCORE', 'REV', 'LIMIT', 0, 1)[1]
  local base = select(2, sw_grant(last))
  return counter, used - (base - (total - permits)), true, base
end

function sliding_window.check(key, limit, windowMs, permits, now)
  local counter, used, aged, base = sw_state(key, windowMs, now)
  local allowed = used + permits <= limit
  local retry = 0
  if not allowed then
    -- the request fits once (used + permits - limit) permits of the oldest live grants have
    -- aged out: when the first grant whose total reaches that far past `base` does. Aged-out
    -- grants still stored hold totals up to `base`, below that; rank 0 is the counter. Gallop
    -- from the oldest grant (few usually need to age out), then bisect: O(log² grants). (A
    -- counter that matches its grants always has them; a key someone else rewrote must not
    -- promise less than a window.)
    local target = (base or math.huge) + used + permits - limit
    local n = redis.call('ZCARD', key) - 1
    local lo, hi, step = 1, 1, 1
    while hi < n and sw_total(key, hi) < target do
      lo, step = hi + 1, step * 2
      hi = math.min(n, hi + step)
    end
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if sw_total(key, mid) < target then lo = mid + 1 else hi = mid end
    end
    local found = redis.call('ZRANGE', key, lo, lo, 'WITHSCORES')
    if found[1] and select(2, sw_grant(found[1])) >= target then
      retry = tonumber(found[2]) + windowMs - now
    else
      retry = windowMs
    end
  end
  local reset, remaining = 0, limit - used
  if used > 0 then reset = nil end
  local blocked = counter and sw_blocked(counter)
  if blocked and blocked > now then
    allowed, remaining, retry, reset = with_block(blocked, now, allowed, remaining, retry, reset or sliding_window.reset(key, windowMs, now))
  end
  -- (a table only here: commit needs three values, and a sorted set's calls cost far more)
  return allowed, remaining, retry, reset, { counter, used, aged }
end

function sliding_window.reset(key, windowMs, now)
  -- the newest two: the newest may be a grant given back whole, holding 0
  local newest = redis.call('ZRANGE', key, -2, -1, 'WITHSCORES')
  for i = #newest - 1, 1, -2 do
    local member = newest[i]
    if string.byte(member) == SW_COUNTER then return 0 end
    if sw_grant(member) > 0 then return math.max(0, tonumber(newest[i + 1]) + windowMs - now) end
  end
  return 0
end

function sliding_window.commit(key, limit, windowMs, permits, now, state)
  local counter, used, aged = state[1], state[2], state[3]
  if aged then redis.call('ZREMRANGEBYSCORE', key, 0, now - windowMs) end
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  local seq, total, at, life = 1, 0, now, nil
  if newest[1] and string.byte(newest[1]) ~= SW_COUNTER then
    local last, held, after = string.match(newest[1], '^%l(%d+):(%d+):(%d+)$')
    seq, total, life = tonumber(last) + 1, tonumber(after), counter and sw_life(counter)
    -- a clock that stepped back must not put this grant before the newest: totals would no
    -- longer grow with rank
    at = math.max(now, tonumber(newest[2]))
    if held == '0' then redis.call('ZREM', key, newest[1]) end
  end
  if not life then
    -- no grants left (or a counter of 0.2): a new life, keeping a block in force
    life = life_id()
    local blocked = counter and sw_blocked(counter)
    if counter then redis.call('ZREM', key, counter) end
    counter = '#' .. life
    if blocked and blocked > now then counter = counter .. '!' .. int(blocked) end
  end
  local ttl, blocked = windowMs, sw_blocked(counter)
  if blocked and blocked > now then ttl = math.max(ttl, blocked - now) end
  local id = sw_seq(seq)
  redis.call('ZADD', key, int(-1 - (used + permits)), counter, int(at), id .. ':' .. int(permits) .. ':' .. int(total + permits))
  redis.call('PEXPIRE', key, int(ttl))
  return limit - used - permits, at + windowMs - now, life .. ':' .. id
end

-- add `delta` to the totals of the grants at ranks from..to
local function sw_shift(key, from, to, delta)
  for first = from, to, SW_CHUNK do
    local members = redis.call('ZRANGE', key, first, math.min(to, first + SW_CHUNK - 1), 'WITHSCORES')
    local old, new = {}, {}
    for i = 1, #members, 2 do
      local id, permits, total = string.match(members[i], '^(%l%d+):(%d+):(%d+)$')
      old[#old + 1] = members[i]
      new[#new + 1] = members[i + 1]
      new[#new + 1] = id .. ':' .. permits .. ':' .. int(total + delta)
    end
    if #old > 0 then
      redis.call('ZREM', key, unpack(old))
      redis.call('ZADD', key, unpack(new))
    end
  end
end

function sliding_window.refund(key, limit, windowMs, permits, now, grant)
  local life, id = string.match(grant, '^(%d+):(%l%d+)$')
  if not life then return 0 end
  local counter, used, aged = sw_state(key, windowMs, now)
  if not counter or sw_life(counter) ~= life then return 0 end
  if aged then
    redis.call('ZREMRANGEBYSCORE', key, 0, now - windowMs)
    redis.call('ZADD', key, int(-1 - used), counter)
  end
  -- Ranks follow seqs: find the grant by its seq, newest first (the usual one to refund), as a
  -- refund of another grant may have renumbered its total.
  local n = redis.call('ZCARD', key) - 1
  local lo, hi = n, n
  local found = redis.call('ZRANGE', key, n, n)[1]
  if not found or string.match(found, '^%l%d+') ~= id then
    lo = 1
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if string.match(redis.call('ZRANGE', key, mid, mid)[1], '^%l%d+') < id then lo = mid + 1 else hi = mid end
    end
    found = redis.call('ZRANGE', key, lo, lo)[1]
  end
  if not found or string.match(found, '^%l%d+') ~= id then return 0 end
  local held, total = sw_grant(found)
  if held == 0 then return 0 end
  local rank, at = lo, redis.call('ZSCORE', key, found)
  local back = math.min(held, permits)
  -- The live permits between two grants are a difference of totals: taking `back` from this
  -- grant lowers the totals from it on, or equally raises those before it. Rewrite the fewer
  -- (a refund of a recent grant, the usual one, rewrites almost none).
  redis.call('ZREM', key, found)
  if n - rank <= rank - 1 then
    sw_shift(key, rank, n - 1, -back)
    total = total - back
  else
    sw_shift(key, 1, rank - 1, back)
  end
  -- the newest stays, holding what is left (perhaps 0): the next seq follows it
  if back < held or rank == n then redis.call('ZADD', key, at, id .. ':' .. int(held - back) .. ':' .. int(total)) end
  redis.call('ZADD', key, int(-1 - (used - back)), counter)
  return back
end

function sliding_window.block(key, limit, windowMs, now, untilMs)
  local existed = redis.call('PTTL', key)
  local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  local counter, score = '#' .. life_id(), -1
  if head[1] and string.byte(head[1]) == SW_COUNTER then
    local old = sw_blocked(head[1])
    if old and old >= untilMs then return end
    redis.call('ZREM', key, head[1])
    counter, score = string.gsub(head[1], '!%d+$', ''), head[2]
  end
  redis.call('ZADD', key, score, counter .. '!' .. int(untilMs))
  keep_until(key, untilMs - now, existed)
end

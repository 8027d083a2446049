-- Include: exact sliding-window limiter. A grant of p permits at t counts against every request
-- before t + windowMs, so no span of windowMs ever holds more than `limit` permits.
-- State: one sorted set per counter, whose cost grows with grants, never with permits:
--   grants   member '<seq>:<permits>:<total>', scored by grant time (ms >= 0). <seq> numbers the
--            key's grants, written as a letter for its digit count then the digits ('a7', 'b12'),
--            so grants with one score sort by seq; a grant's time is never before the newest
--            grant's, so rank order is grant order. <total> is the permits the key's grants hold
--            up to this one, so the live permits from grant i to grant j are total(j) -
--            total(i) + permits(i), and the grants a refused request waits for are found by
--            binary search, not by walking them. A grant refunded in part holds what it has
--            left: the member is its own refund ledger, and a whole refund removes it
--   counter  member '#<seq of the newest grant>.<life id>' (see life.lua), with '!<ms>' after it
--            while a block lasts until then, scored -1 - (permits the live grants hold): always
--            the lowest score, so ZRANGE 0 0 reads it and `used` (and the block) cost O(log n)
-- Grants that age out are removed by the next decision, which takes their permits off the
-- counter. The key expires windowMs after the last grant (or when the block ends, if later); seqs
-- start again with a new life when it is gone.
-- sliding_window.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, used
--   (reset is nil when it takes a lookup that only an uncommitted decision needs: see .reset;
--   while blocked, refused with remaining 0 and retry the longer of the block and its own wait)
-- sliding_window.commit(key, limit, windowMs, permits, now, used) -> remaining, reset, grant id
--   ('<life>:<seq>'); charges even past the limit (penalize)
-- sliding_window.reset(key, windowMs, now) -> ms until the newest grant ages out
-- sliding_window.refund(key, limit, windowMs, permits, now, grant) -> permits given back (0 when the
--   grant is unknown, already refunded or aged out); a grant refunded in part keeps the rest
-- sliding_window.block(key, limit, windowMs, now, untilMs) -> refuses until untilMs (a longer
--   block stays)
local sliding_window = {}

-- members rewritten per call when a refund renumbers totals: bounds the reply held at once
local SW_CHUNK = 256

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

-- the permits granted on this key before the grant at `rank` (its total minus its permits)
local function sw_before(key, rank)
  local member = redis.call('ZRANGE', key, rank, rank)[1]
  if not member then return nil end
  local permits, total = sw_grant(member)
  return total - permits
end

-- the counter member and the permits the live grants hold, after removing the aged-out ones
local function sw_used(key, windowMs, now)
  local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if not head[1] then return nil, 0 end
  local used, cutoff = -1 - tonumber(head[2]), now - windowMs
  if cutoff >= 0 then
    local last = redis.call('ZRANGE', key, cutoff, 0, 'BYSCORE', 'REV', 'LIMIT', 0, 1)[1]
    if last then
      -- the aged-out grants are the oldest ones: their permits are two totals apart
      used = used - (select(2, sw_grant(last)) - sw_before(key, 1))
      redis.call('ZREMRANGEBYSCORE', key, 0, cutoff)
      redis.call('ZADD', key, int(-1 - used), head[1])
    end
  end
  return head[1], used
end

function sliding_window.check(key, limit, windowMs, permits, now)
  local head, used = sw_used(key, windowMs, now)
  local allowed = used + permits <= limit
  local retry = 0
  if not allowed then
    -- the request fits once (used + permits - limit) permits of the oldest grants have aged
    -- out: when the first grant whose total reaches that far past the oldest's start does.
    -- Rank 0 is the counter; gallop from the oldest grant (few usually need to age out), then
    -- bisect: O(log² grants). (A counter that matches its grants always has them; a key
    -- someone else rewrote must not promise less than a window.)
    local target = (sw_before(key, 1) or math.huge) + used + permits - limit
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
  local blocked = head and string.find(head, '!', 1, true) and tonumber(string.match(head, '!(%d+)$'))
  if blocked and blocked > now then
    allowed, remaining, retry, reset = with_block(blocked, now, allowed, remaining, retry, reset or sliding_window.reset(key, windowMs, now))
  end
  return allowed, remaining, retry, reset, used
end

function sliding_window.reset(key, windowMs, now)
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if not newest[1] or string.sub(newest[1], 1, 1) == '#' then return 0 end
  return tonumber(newest[2]) + windowMs - now
end

function sliding_window.commit(key, limit, windowMs, permits, now, used)
  local head = redis.call('ZRANGE', key, 0, 0)
  local seq, total, at, life, blocked = 1, 0, now, nil, nil
  if head[1] then
    local last, id, untilMs = string.match(head[1], '^#(%d+)%.?(%d*)!?(%d*)$')
    seq, life, blocked = tonumber(last) + 1, id ~= '' and id or nil, tonumber(untilMs)
    redis.call('ZREM', key, head[1])
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    if newest[1] then
      total = select(2, sw_grant(newest[1]))
      -- a clock that stepped back must not put this grant before the newest: totals would
      -- no longer grow with rank
      at = math.max(now, tonumber(newest[2]))
    end
  end
  life = life or life_id()
  local counter, ttl = '#' .. int(seq) .. '.' .. life, windowMs
  if blocked and blocked > now then
    counter, ttl = counter .. '!' .. int(blocked), math.max(ttl, blocked - now)
  end
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
  local head, used = sw_used(key, windowMs, now)
  if not head or string.match(head, '^#%d+%.(%d+)') ~= life then return 0 end
  -- Aged-out grants are gone now, their permits given back by time. Ranks follow seqs: find the
  -- grant by its seq, newest first (the usual one to refund), as a refund of another grant may
  -- have renumbered its total.
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
  local rank, at = lo, redis.call('ZSCORE', key, found)
  local held, total = sw_grant(found)
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
  if back < held then redis.call('ZADD', key, at, id .. ':' .. int(held - back) .. ':' .. int(total)) end
  redis.call('ZADD', key, int(-1 - (used - back)), head)
  return back
end

function sliding_window.block(key, limit, windowMs, now, untilMs)
  local existed = redis.call('PTTL', key)
  local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  local counter, score = '#0.' .. life_id(), -1
  if head[1] and string.sub(head[1], 1, 1) == '#' then
    local old = tonumber(string.match(head[1], '!(%d+)$'))
    if old and old >= untilMs then return end
    redis.call('ZREM', key, head[1])
    counter, score = string.gsub(head[1], '!%d+$', ''), head[2]
  end
  redis.call('ZADD', key, score, counter .. '!' .. int(untilMs))
  keep_until(key, untilMs - now, existed)
end

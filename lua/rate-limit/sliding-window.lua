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
--   counter  member '#<life>:<base>:<oldest>;<seq>:<total>:<at>' (life: see life.lua), with
--            '!<ms>' after it while a block lasts until then, scored -1 (always rank 0): the
--            total before the oldest live grant, and that grant's time ('' when none is live);
--            the newest grant's seq, the total after it and its time. The live grants hold
--            total - base permits, so a decision reads the counter alone, scores and all,
--            until the oldest grant ages out. What changes with each grant comes last: a grant
--            keeps the text before the ';' as it was read (turning numbers into text is most
--            of a decision's own cost in Lua)
-- Grants that aged out are left for the next grant or refund to remove: a check counts without
-- them, so a refusal writes nothing. The key expires windowMs after the last grant (or when the
-- block ends, if later); seqs start again with a new life when it is gone.
-- A grant makes four calls (read the counter; ZREM it; ZADD the new counter and the grant;
-- PEXPIRE), and two more when grants aged out (find the oldest live one; remove those before it);
-- a grant in the same ms as the one before it, three (no PEXPIRE: the expiry is already its own).
-- sliding_window.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, state
--   (reset is nil when it takes a lookup that only an uncommitted decision needs: see .reset;
--   while blocked, refused with remaining 0 and retry the longer of the block and its own wait)
-- sliding_window.commit(key, limit, windowMs, permits, now, state) -> remaining, reset, grant id
--   ('<life>:<seq>'); charges even past the limit (penalize)
-- sliding_window.reset(key, windowMs, now) -> ms until the newest grant ages out
-- sliding_window.refund(key, limit, windowMs, permits, now, grant) -> permits given back (0 when the
--   grant is unknown, already refunded or aged out); a grant refunded in part keeps the rest
-- sliding_window.block(key, limit, windowMs, now, untilMs) -> refuses until untilMs (a longer
--   block stays)
local sliding_window = {}

-- members rewritten per call when a refund renumbers totals: bounds the reply held at once
local SW_CHUNK = 256

-- What this call has looked up of a key's grants: { newest = time of the newest grant (false:
-- none), [target] = time of the first grant whose total reaches target (false: none) }. A batch's
-- refusals on one key (a hot key over its limit) search once; a write forgets it (sw_store).
local sw_lookups = {}

local function sw_seen(key)
  local seen = sw_lookups[key]
  if not seen then
    seen = {}
    sw_lookups[key] = seen
  end
  return seen
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

-- The counter, as a table: member (as stored, nil when new), head (the member up to its ';' as
-- stored; nil once life, base or oldest change), life, seq, total, base, at, oldest (nil: no live
-- grant), blocked (ms, nil: none). A key without one in this shape (new, or a counter of 0.2
-- '#<seq>.<life>', or grants someone else wrote) is read from its grants: seqs go on from the
-- newest, in a new life.
local function sw_counter(key)
  local member = redis.call('ZRANGE', key, 0, 0)[1]
  if member then
    local head, life, base, oldest, seq, total, at, blocked = string.match(member, '^(#(%d+):(%d+):(%d*);)(%d+):(%d+):(%d+)!?(%d*)$')
    if head then
      return {
        member = member, head = head, life = life, seq = tonumber(seq), total = tonumber(total), base = tonumber(base), at = tonumber(at),
        oldest = tonumber(oldest), blocked = blocked ~= '' and tonumber(blocked) or nil,
      }
    end
  end
  local counter = { seq = 0, total = 0, base = 0, at = 0 }
  if member and string.byte(member) == 35 then
    counter.member, counter.blocked = member, tonumber(string.match(member, '!(%d+)$'))
  end
  local first = counter.member and 1 or 0
  local oldest = redis.call('ZRANGE', key, first, first, 'WITHSCORES')
  if oldest[1] then
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    local permits, total = sw_grant(oldest[1])
    counter.seq = tonumber(string.match(newest[1], '^%l(%d+)'))
    counter.total, counter.at = select(2, sw_grant(newest[1])), tonumber(newest[2])
    counter.base, counter.oldest = total - permits, tonumber(oldest[2])
  end
  return counter
end

-- the counter member for `c` (seq and total as text when the caller has them)
local function sw_member(c, now, seq, total)
  local head = c.head or '#' .. c.life .. ':' .. int(c.base) .. ':' .. (c.oldest and int(c.oldest) or '') .. ';'
  local member = head .. (seq or int(c.seq)) .. ':' .. (total or int(c.total)) .. ':' .. int_of(c.at)
  if c.blocked and c.blocked > now then member = member .. '!' .. int(c.blocked) end
  return member
end

-- `c` counts from the grant `first` (ZRANGE ... WITHSCORES: member, time), or holds none live
local function sw_oldest(c, first)
  c.head = nil
  if first[1] then
    local permits, total = sw_grant(first[1])
    c.base, c.oldest = total - permits, tonumber(first[2])
  else
    c.base, c.oldest = c.total, nil
  end
end

-- what the grants that aged out held: `c` then counts only live ones (their members stay, for
-- the next write to remove); true when there were any
local function sw_age(key, c, windowMs, now)
  local cutoff = now - windowMs
  if not c.oldest or c.oldest > cutoff then return false end
  sw_oldest(c, redis.call('ZRANGE', key, '(' .. int(cutoff), '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES'))
  return true
end

function sliding_window.check(key, limit, windowMs, permits, now)
  local c = sw_counter(key)
  c.aged = sw_age(key, c, windowMs, now)
  local used = c.total - c.base
  local allowed = used + permits <= limit
  local retry = 0
  if not allowed then
    -- the request fits once (used + permits - limit) permits of the oldest live grants have
    -- aged out: when the first grant whose total reaches that far past `base` does. Grants that
    -- aged out and are still stored hold totals up to `base`, below that; rank 0 is the counter.
    -- Gallop from the oldest grant (few usually need to age out), then bisect: O(log² grants).
    -- (A counter that matches its grants always has them; a key someone else rewrote must not
    -- promise less than a window.)
    local target = c.total + permits - limit
    local seen = sw_seen(key)
    local at = seen[target]
    if at == nil then
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
      at = found[1] and string.byte(found[1]) ~= 35 and select(2, sw_grant(found[1])) >= target and tonumber(found[2])
      seen[target] = at
    end
    retry = at and at + windowMs - now or windowMs
  end
  local reset, remaining = 0, limit - used
  if used > 0 then reset = nil end
  if c.blocked and c.blocked > now then
    allowed, remaining, retry, reset = with_block(c.blocked, now, allowed, remaining, retry, reset or sliding_window.reset(key, windowMs, now))
  end
  return allowed, remaining, retry, reset, c
end

function sliding_window.reset(key, windowMs, now)
  local seen = sw_seen(key)
  if seen.newest == nil then
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    seen.newest = newest[1] and string.byte(newest[1]) ~= 35 and tonumber(newest[2])
  end
  return seen.newest and math.max(0, seen.newest + windowMs - now) or 0
end

-- writes counter `c` in place of the stored one (and removes what aged out); `seq` and `total`:
-- see sw_member
local function sw_store(key, c, windowMs, now, seq, total, ...)
  if c.aged then redis.call('ZREMRANGEBYSCORE', key, 0, now - windowMs) end
  if c.member then redis.call('ZREM', key, c.member) end
  c.member = sw_member(c, now, seq, total)
  sw_lookups[key] = nil
  redis.call('ZADD', key, -1, c.member, ...)
end

function sliding_window.commit(key, limit, windowMs, permits, now, c)
  if not c.life then c.life, c.head = life_id(), nil end
  -- a clock that stepped back must not put this grant before the newest: totals would no
  -- longer grow with rank
  local at = math.max(now, c.at)
  -- the grant before, in this same ms, gave the key the expiry this one needs (a batch's grants
  -- on a hot key share their ms; a block since only lengthened it): only a later grant moves it
  local expires = c.seq == 0 or at ~= c.at
  local before = c.total
  c.seq, c.total, c.at = c.seq + 1, c.total + permits, at
  if not c.oldest then c.oldest, c.head = at, nil end
  local seq, total = int(c.seq), int(c.total)
  local id = string.char(96 + #seq) .. seq
  sw_store(key, c, windowMs, now, seq, total, int_of(at), id .. ':' .. int_of(permits) .. ':' .. total)
  if expires then
    local ttl = windowMs
    if c.blocked and c.blocked > now then ttl = math.max(ttl, c.blocked - now) end
    redis.call('PEXPIRE', key, int_of(ttl))
  end
  return limit - (before - c.base) - permits, at + windowMs - now, c.life .. ':' .. id
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
  local c = sw_counter(key)
  if c.life ~= life then return 0 end
  if sw_age(key, c, windowMs, now) then
    redis.call('ZREMRANGEBYSCORE', key, 0, now - windowMs)
  end
  -- Ranks follow seqs: find the grant by its seq, newest first (the usual one to refund), as a
  -- refund of another grant may have renumbered its total.
  local n = redis.call('ZCARD', key) - 1
  local lo, hi = n, n
  local found = n > 0 and redis.call('ZRANGE', key, n, n)[1]
  if not found or string.match(found, '^%l%d+') ~= id then
    lo = 1
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if string.match(redis.call('ZRANGE', key, mid, mid)[1], '^%l%d+') < id then lo = mid + 1 else hi = mid end
    end
    found = lo >= 1 and redis.call('ZRANGE', key, lo, lo)[1]
  end
  local back = 0
  if found and string.match(found, '^%l%d+') == id then
    local rank, at = lo, redis.call('ZSCORE', key, found)
    local held, total = sw_grant(found)
    back = math.min(held, permits)
    -- The live permits between two grants are a difference of totals: taking `back` from this
    -- grant lowers the totals from it on (the counter's too), or equally raises those before it.
    -- Rewrite the fewer (a refund of a recent grant, the usual one, rewrites almost none).
    redis.call('ZREM', key, found)
    if n - rank <= rank - 1 then
      sw_shift(key, rank, n - 1, -back)
      total, c.total = total - back, c.total - back
    else
      sw_shift(key, 1, rank - 1, back)
    end
    if back < held then redis.call('ZADD', key, at, id .. ':' .. int(held - back) .. ':' .. int(total)) end
  end
  -- the oldest grant may have gone or been renumbered: the counter reads it again
  sw_oldest(c, redis.call('ZRANGE', key, 1, 1, 'WITHSCORES'))
  sw_store(key, c, windowMs, now)
  return back
end

function sliding_window.block(key, limit, windowMs, now, untilMs)
  local existed = redis.call('PTTL', key)
  local c = sw_counter(key)
  if c.blocked and c.blocked >= untilMs then return end
  c.life, c.blocked = c.life or life_id(), untilMs
  sw_store(key, c, windowMs, now)
  keep_until(key, untilMs - now, existed)
end

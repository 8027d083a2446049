-- Include: exact sliding-window limiter. A grant of p permits at t counts against every request
-- before t + windowMs, so no span of windowMs ever holds more than `limit` permits.
-- State: one sorted set per counter, whose cost grows with grants, never with permits:
--   grants   member struct.pack('>dddd', seq, permits, total, at), scored by its time `at` (ms
--            >= 0). seq numbers the key's grants: big-endian doubles of whole numbers sort as the
--            numbers do, so grants with one score sort by seq; a grant's time is never before the
--            newest grant's, so rank order is grant order. total is the permits the key's grants
--            hold up to this one, so the live permits from grant i to grant j are total(j) -
--            total(i) + permits(i), and the grants a refused request waits for are found by
--            binary search, not by walking them. A grant refunded in part holds what it has
--            left: the member is its own refund ledger, and a whole refund removes it. Packed,
--            with its time, a member is read with one struct.unpack and no score: parsing text
--            members, writing them and reading scores cost a decision more than its two calls
--   counter  member '#' .. struct.pack('>ddddddd', base, oldest, seq, total, blocked, life's µs,
--            life's number) (life: see life_at in life.lua), scored +inf (always the last rank):
--            the total before the oldest live grant and that grant's time (-1 when none is live);
--            the newest grant's seq and the total after it when the counter was written; until
--            when a block lasts (0: none). Packed, it is read with one struct.unpack: as text,
--            parsing it cost more than the decision's own Redis calls, and a life read as text
--            made a string per decision. A grant with a later seq supersedes the
--            counter's seq and total, so a grant leaves the counter as it is: one read (ZRANGE
--            -2 -1: the newest grant and the counter) and one ZADD decide a key whose oldest
--            grant is still live. The counter is rewritten only when its own fields change: a
--            new life, grants aging out, a refund, a block.
-- Grants that aged out are left for the next grant or refund to remove: a check counts without
-- them, so a refusal writes nothing. The key expires windowMs after the last grant, rounded up to
-- a slice of windowMs / 64 (or when the block ends, if later); seqs start again with a new life
-- when it is gone.
-- A grant makes two calls (read; ZADD), a third when it moves the key's expiry to a later slice
-- of windowMs / 64 (expire_in_slices in life.lua), one more when grants aged out (find the oldest
-- live one), and, at most once a slice while grants age out steadily, two more (remove those
-- before it; ZREM the counter, written again with the grant: see sw_rewrite).
-- sliding_window.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, state
--   (while blocked, refused with remaining 0 and retry the longer of the block and its own wait)
-- sliding_window.commit(key, limit, windowMs, permits, now, state) -> remaining, reset, then the
--   grant id '<life>:<seq>' in parts (decide.lua): the life's µs, the seq's number (the id writes
--   it as a letter for its digit count, then the digits), the life's number and 0 (nothing is
--   given back of a life: a grant is its own ledger); charges even past the limit (penalize)
-- sliding_window.consume(key, limit, windowMs, permits, now) -> check, then commit if allowed (as
--   fixed_window.consume), a grant on a key in its common shape without either (see it)
-- sliding_window.refund(key, limit, windowMs, permits, now, grant) -> permits given back (0 when the
--   grant is unknown, already refunded or aged out); a grant refunded in part keeps the rest
-- sliding_window.block(key, limit, windowMs, now, untilMs) -> refuses until untilMs (a longer
--   block stays)
local sliding_window = {}

-- members rewritten per call when a refund renumbers totals: bounds the reply held at once
local SW_CHUNK = 256

-- What this call has read of each key, until a write to it (sw_forget): its newest grant and
-- counter (the ZRANGE reply), and the time of the first grant whose total reaches a target (false:
-- none). A batch's refusals on one key (a hot key over its limit) read it once.
local sw_tails, sw_waits = {}, {}

local function sw_forget(key)
  sw_tails[key], sw_waits[key] = nil, nil
end

-- a grant member's bytes
local SW_GRANT = 32

-- the grant member for these
local function sw_grant_member(seq, permits, total, at)
  return struct.pack('>dddd', seq, permits, total, at)
end

-- a grant member's seq, permits, total and time (nil when it is no grant of this shape)
local function sw_grant(member)
  if #member ~= SW_GRANT then return nil end
  local seq, permits, total, at = struct.unpack('>dddd', member)
  return seq, permits, total, at
end

-- the total of the grant at `rank`
local function sw_total(key, rank)
  return select(3, sw_grant(redis.call('ZRANGE', key, rank, rank)[1]))
end

-- A key whose counter is in no shape of ours (0.2's '#<seq>.<life>', scored below 0; none) is
-- read from its grants: seqs go on from the newest, in a new life. Counters of other shapes are
-- removed by the next write; a block they held stays.
local function sw_rebuild(key)
  local c = { seq = 0, total = 0, base = 0, at = 0, first = 0, dirty = true, foreign = {} }
  local lowest = redis.call('ZRANGE', key, 0, 0)[1]
  if lowest and string.byte(lowest) == 35 then
    c.foreign[1], c.blocked, c.first = lowest, tonumber(string.match(lowest, '!(%d+)$')), 1
  end
  local highest = redis.call('ZRANGE', key, -1, -1)[1]
  if highest and string.byte(highest) == 35 and highest ~= lowest then c.foreign[#c.foreign + 1] = highest end
  local oldest = redis.call('ZRANGE', key, 0, '(+inf', 'BYSCORE', 'LIMIT', 0, 1)[1]
  if oldest and string.byte(oldest) ~= 35 then
    local newest = redis.call('ZRANGE', key, '(+inf', 0, 'BYSCORE', 'REV', 'LIMIT', 0, 1)[1]
    local _, permits, total, at = sw_grant(oldest)
    c.seq, _, c.total, c.at = sw_grant(newest)
    c.base, c.oldest = total - permits, at
  end
  return c
end

-- The counter, as a table: member (as stored, nil when new), life, base, oldest (nil: no live
-- grant), seq, total (the newest grant's when it has the later seq), at (the newest grant's
-- time; 0: none), blocked (ms, nil: none), first (the oldest grant's rank; nil: 0), dirty (true:
-- the counter must be written with the next grant; 'aged': only its oldest changed, see
-- sw_rewrite), stale (the stored oldest, when grants aged out since).
local SW_COUNTER = 57

local function sw_counter(key)
  local tail = sw_tails[key]
  if not tail then
    tail = redis.call('ZRANGE', key, -2, -1)
    sw_tails[key] = tail
  end
  local n = #tail
  if n == 0 then return { seq = 0, total = 0, base = 0, at = 0 } end
  -- the last member is the counter when it is one of ours (only ours is scored +inf)
  local member = tail[n]
  if #member ~= SW_COUNTER or string.byte(member) ~= 35 then return sw_rebuild(key) end
  local base, oldest, seq, total, blocked, life, number = struct.unpack('>ddddddd', member, 2)
  local at = 0
  local newest, _, newest_total, newest_at
  if n == 2 then newest, _, newest_total, newest_at = sw_grant(tail[1]) end
  if newest then
    at = newest_at
    if newest >= seq then seq, total = newest, newest_total end
  end
  return {
    member = member, life = life, number = number, base = base, oldest = oldest >= 0 and oldest or nil,
    seq = seq, total = total, at = at, blocked = blocked > 0 and blocked or nil,
  }
end

-- the counter member for `c`
local function sw_member(c, now)
  local blocked = c.blocked and c.blocked > now and c.blocked or 0
  return '#' .. struct.pack('>ddddddd', c.base, c.oldest or -1, c.seq, c.total, blocked, c.life, c.number)
end

-- `c` counts from the grant `first` (a member; the counter or nil: none)
local function sw_oldest(c, first)
  if not c.dirty then c.dirty = 'aged' end
  local _, permits, total, at
  if first then _, permits, total, at = sw_grant(first) end
  if permits then
    c.base, c.oldest = total - permits, at
  else
    c.base, c.oldest = c.total, nil
  end
end

-- what the grants that aged out held: `c` then counts only live ones (their members stay, for
-- the next write to remove); true when there were any. `c.stale` keeps the stored oldest.
local function sw_age(key, c, windowMs, now)
  local cutoff = now - windowMs
  if not c.oldest or c.oldest > cutoff then return false end
  c.stale = c.oldest
  sw_oldest(c, redis.call('ZRANGE', key, '(' .. int(cutoff), '+inf', 'BYSCORE', 'LIMIT', 0, 1)[1])
  return true
end

-- Whether a grant must write the counter: when anything but ageing changed it; when grants aged
-- out, only once its stored oldest is a slice of windowMs / 64 behind the oldest live grant. Until
-- then the stored counter's oldest stays behind, and each decision finds the oldest live grant
-- again (one read, where writing the counter costs three: remove what aged out, ZREM the counter,
-- a bigger ZADD). A key granted steadily, whose every grant ages one out, writes its counter
-- once a slice, not once a grant; one granted less often than a slice writes it as before; what
-- aged out and stays is at most a slice's grants.
local function sw_rewrite(c, windowMs)
  if c.dirty == true then return true end
  if c.dirty ~= 'aged' then return false end
  return not c.oldest or c.oldest - c.stale >= math.max(1, math.floor(windowMs / 64))
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
    -- aged out and are still stored hold totals up to `base`, below that; the counter is last.
    -- Gallop from the oldest grant (few usually need to age out), then bisect: O(log² grants).
    -- (A counter that matches its grants always has them; a key someone else rewrote must not
    -- promise less than a window.)
    local target = c.total + permits - limit
    local seen = sw_waits[key]
    if not seen then
      seen = {}
      sw_waits[key] = seen
    end
    local at = seen[target]
    if at == nil then
      local last = redis.call('ZCARD', key) - 1 - (c.member and 1 or 0)
      local lo, step = c.first or 0, 1
      local hi = lo
      while hi < last and sw_total(key, hi) < target do
        lo, step = hi + 1, step * 2
        hi = math.min(last, hi + step)
      end
      while lo < hi do
        local mid = math.floor((lo + hi) / 2)
        if sw_total(key, mid) < target then lo = mid + 1 else hi = mid end
      end
      local found = redis.call('ZRANGE', key, lo, lo)[1]
      local _, total, when
      if found then _, _, total, when = sw_grant(found) end
      at = total and total >= target and when or false
      seen[target] = at
    end
    retry = at and at + windowMs - now or windowMs
  end
  -- the limit is full again when the newest grant ages out
  local reset, remaining = 0, limit - used
  if used > 0 then reset = math.max(0, c.at + windowMs - now) end
  if c.blocked and c.blocked > now then
    allowed, remaining, retry, reset = with_block(c.blocked, now, allowed, remaining, retry, reset)
  end
  return allowed, remaining, retry, reset, c
end

-- writes counter `c` in place of the stored one (and removes what aged out), with `...` (score,
-- member pairs) in the same ZADD
local function sw_store(key, c, windowMs, now, ...)
  if c.aged then redis.call('ZREMRANGEBYSCORE', key, 0, now - windowMs) end
  if c.member then redis.call('ZREM', key, c.member) end
  if c.foreign then redis.call('ZREM', key, unpack(c.foreign)) end
  c.member, c.dirty, c.foreign = sw_member(c, now), nil, nil
  sw_forget(key)
  redis.call('ZADD', key, '+inf', c.member, ...)
end

function sliding_window.commit(key, limit, windowMs, permits, now, c)
  if not c.life then
    c.life, c.number = life_at()
    c.dirty = true
  end
  -- a clock that stepped back must not put this grant before the newest: totals would no
  -- longer grow with rank
  local at = math.max(now, c.at)
  -- the key lives windowMs after this grant; the newest grant's write set what it needed (see
  -- expire_in_slices in life.lua), unless the clock stepped back since or another build wrote
  -- the key
  local needed, last = at + windowMs, c.at > 0 and c.at <= now and not c.foreign and c.at + windowMs or nil
  if c.blocked and c.blocked > now then needed, last = math.max(needed, c.blocked), nil end
  local before = c.total
  c.seq, c.total, c.at = c.seq + 1, c.total + permits, at
  if not c.oldest then c.oldest, c.dirty = at, true end
  local member = sw_grant_member(c.seq, permits, c.total, at)
  if sw_rewrite(c, windowMs) then
    sw_store(key, c, windowMs, now, int_of(at), member)
  else
    sw_forget(key)
    redis.call('ZADD', key, int_of(at), member)
  end
  expire_in_slices(key, needed, now, windowMs, last)
  return limit - (before - c.base) - permits, at + windowMs - now, c.life, c.seq, c.number, 0
end

-- add `delta` to the totals of the grants at ranks from..to
-- A grant on a key in the common shape (its newest grant and our counter last, the oldest grant
-- still live, no block in force, the clock not behind the newest grant) needs neither the counter
-- as a table nor its rewrite: it is decided from the two members read, and adds one. Anything
-- else (a refusal too, which looks for its wait) goes through check and commit, which find the
-- members read in sw_tails.
function sliding_window.consume(key, limit, windowMs, permits, now)
  if not sw_tails[key] then
    local tail = redis.call('ZRANGE', key, -2, -1)
    local grant, counter = tail[1], tail[2]
    if counter and #counter == SW_COUNTER and string.byte(counter) == 35 and #grant == SW_GRANT then
      local base, oldest, seq, total, blocked, life, number = struct.unpack('>ddddddd', counter, 2)
      local newest, _, newest_total, at = struct.unpack('>dddd', grant)
      if newest >= seq then seq, total = newest, newest_total end
      local used = total - base
      if oldest >= 0 and oldest > now - windowMs and blocked <= now and at <= now and used + permits <= limit then
        seq = seq + 1
        redis.call('ZADD', key, int_of(now), sw_grant_member(seq, permits, total + permits, now))
        sw_forget(key)
        expire_in_slices(key, now + windowMs, now, windowMs, at + windowMs)
        return true, limit - used - permits, windowMs, life, seq, number, 0
      end
    end
    sw_tails[key] = tail
  end
  local allowed, remaining, retry, reset, c = sliding_window.check(key, limit, windowMs, permits, now)
  if not allowed then return false, remaining, retry, reset end
  return true, sliding_window.commit(key, limit, windowMs, permits, now, c)
end

local function sw_shift(key, from, to, delta)
  for first = from, to, SW_CHUNK do
    local members = redis.call('ZRANGE', key, first, math.min(to, first + SW_CHUNK - 1), 'WITHSCORES')
    local old, new = {}, {}
    for i = 1, #members, 2 do
      local seq, permits, total, at = sw_grant(members[i])
      old[#old + 1] = members[i]
      new[#new + 1] = members[i + 1]
      new[#new + 1] = sw_grant_member(seq, permits, total + delta, at)
    end
    if #old > 0 then
      redis.call('ZREM', key, unpack(old))
      redis.call('ZADD', key, unpack(new))
    end
  end
end

function sliding_window.refund(key, limit, windowMs, permits, now, grant)
  local life, id = string.match(grant, '^(%d+):%l(%d+)$')
  if not life then return 0 end
  id = tonumber(id)
  local c = sw_counter(key)
  if not c.life or life_text(c.life, c.number) ~= life then return 0 end
  if sw_age(key, c, windowMs, now) then
    redis.call('ZREMRANGEBYSCORE', key, 0, now - windowMs)
  end
  -- Ranks follow seqs: find the grant by its seq, newest first (the usual one to refund), as a
  -- refund of another grant may have renumbered its total. The grants are ranks 0..n, the
  -- counter n + 1.
  local n = redis.call('ZCARD', key) - 2
  local lo, hi = n, n
  local found = n >= 0 and redis.call('ZRANGE', key, n, n)[1]
  if not found or sw_grant(found) ~= id then
    lo = 0
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if sw_grant(redis.call('ZRANGE', key, mid, mid)[1]) < id then lo = mid + 1 else hi = mid end
    end
    found = lo >= 0 and redis.call('ZRANGE', key, lo, lo)[1]
  end
  local back = 0
  if found and sw_grant(found) == id then
    local rank = lo
    local _, held, total, at = sw_grant(found)
    back = math.min(held, permits)
    -- The live permits between two grants are a difference of totals: taking `back` from this
    -- grant lowers the totals from it on (the counter's too), or equally raises those before it.
    -- Rewrite the fewer (a refund of a recent grant, the usual one, rewrites almost none).
    redis.call('ZREM', key, found)
    if n - rank <= rank then
      sw_shift(key, rank, n - 1, -back)
      total, c.total = total - back, c.total - back
    else
      sw_shift(key, 0, rank - 1, back)
    end
    if back < held then redis.call('ZADD', key, int(at), sw_grant_member(id, held - back, total, at)) end
  end
  -- the oldest grant may have gone or been renumbered: the counter reads it again
  sw_oldest(c, redis.call('ZRANGE', key, 0, 0)[1])
  sw_store(key, c, windowMs, now)
  return back
end

function sliding_window.block(key, limit, windowMs, now, untilMs)
  local existed = redis.call('PTTL', key)
  local c = sw_counter(key)
  if c.blocked and c.blocked >= untilMs then return end
  if not c.life then c.life, c.number = life_at() end
  c.blocked = untilMs
  sw_store(key, c, windowMs, now)
  keep_until(key, untilMs - now, existed)
end

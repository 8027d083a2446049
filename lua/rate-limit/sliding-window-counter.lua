-- Include: approximate sliding window (a "sliding window counter"): the fixed window's counter
-- plus the previous window's, weighted by how much of the previous window a span of windowMs
-- ending now still covers. O(1) per decision, whatever the traffic. Bounded error: no fixed
-- window holds more than `limit`, so no span of windowMs more than 2 × limit - 1 (a burst at the
-- end of one window, then what the weight lets through just before the next ends); it may also
-- refuse what the exact window would grant, when the previous window's grants came early in it.
-- State: the fixed window's hash (see fixed-window.lua: a field per window named by its index,
-- e, b, r<n>), with the count of window w - 1 in its own field as well. The weighted count is kept
-- in permit·ms, exact in a double while limit × windowMs stays under 2^53 (checked at the edge, as
-- for buckets). A decision reads three fields: the two windows' and e.
-- A window's first grant starts a new life (the previous window's count kept), so grant ids and
-- the refund ledger are the fixed window's: a grant is given back only within its own window.
-- The key expires when its newest window stops weighing, windowMs after that window ends (or
-- when the block does, if later).
-- sliding_window_counter.check(key, limit, windowMs, permits, now) -> allowed, remaining (< 0 past
--   the limit), retry, reset, state ([1] this window's count as stored, [2] the previous one's,
--   [3] e, [4] the block as in fixed_window.check; while blocked, refused with remaining 0 and
--   retry the longer of the block and the counter's own wait)
-- sliding_window_counter.commit(key, limit, windowMs, permits, now, state) -> remaining, reset,
--   grant id in parts (as fixed_window.commit's); charges even past the limit (penalize)
-- refund and block: fixed_window's (the same fields mean the same things)
local sliding_window_counter = {}

-- the permits that fit now (< 0 past the limit), `elapsed` ms into the current window, and the
-- ms until the key is back to its full limit (the newest window stops weighing)
local function swc_room(limit, windowMs, elapsed, current, previous)
  local fits = math.floor((limit * windowMs - previous * (windowMs - elapsed) - current * windowMs) / windowMs)
  local endsIn = windowMs - elapsed
  return fits, current > 0 and endsIn + windowMs or previous > 0 and endsIn or 0
end

-- ms until `permits` fit, when they do not now
local function swc_wait(limit, windowMs, permits, elapsed, current, previous)
  if current + permits <= limit then
    -- in this window, once the previous one weighs little enough (it weighs: they do not fit)
    return windowMs - math.floor((limit - current - permits) * windowMs / previous) - elapsed
  end
  -- in the next window, once this one (then the previous) weighs little enough; more than the
  -- limit (a penalty's check) never fits: the longest wait
  if current == 0 or permits > limit then return 2 * windowMs - elapsed end
  return 2 * windowMs - elapsed - math.floor((limit - permits) * windowMs / current)
end

function sliding_window_counter.check(key, limit, windowMs, permits, now)
  local window = math.floor(now / windowMs)
  local elapsed = now - window * windowMs
  local state = redis.call('HMGET', key, int_of(window), int_of(window - 1), 'e')
  local current, previous = tonumber(state[1]) or 0, tonumber(state[2]) or 0
  local fits, reset = swc_room(limit, windowMs, elapsed, current, previous)
  local allowed = permits <= fits
  local retry = allowed and 0 or swc_wait(limit, windowMs, permits, elapsed, current, previous)
  local blocked = block_of(key, state[3])
  if blocked then
    state[4] = blocked
    allowed, fits, retry, reset = with_block(blocked, now, allowed, fits, retry, reset)
  end
  return allowed, fits, retry, reset, state
end

function sliding_window_counter.commit(key, limit, windowMs, permits, now, state)
  local window = math.floor(now / windowMs)
  local elapsed = now - window * windowMs
  local count, e = state[1], state[3]
  local current, previous = tonumber(count) or 0, tonumber(state[2]) or 0
  local c, life = current + permits, e
  if count and e then
    -- written, not incremented (see fixed_window.commit)
    redis.call('HSET', key, int_of(window), int(c))
  else
    -- a new life: this window's first grant, or the first since a reset; the previous window's
    -- count stays, and a block in force
    local blocked = state[4]
    life = life_id()
    if e or count or state[2] then redis.call('DEL', key) end
    local ttl, stored = 2 * windowMs - elapsed, life
    if blocked and blocked > now then stored, ttl = life .. '!', math.max(ttl, blocked - now) end
    if previous > 0 then
      redis.call('HSET', key, int_of(window), int_of(c), 'e', stored, int_of(window - 1), int_of(previous))
    else
      redis.call('HSET', key, int_of(window), int_of(c), 'e', stored)
    end
    if blocked and blocked > now then redis.call('HSET', key, 'b', int(blocked)) end
    redis.call('PEXPIRE', key, int_of(ttl))
  end
  local fits, reset = swc_room(limit, windowMs, elapsed, c, previous)
  return fits, reset, life, current
end

sliding_window_counter.refund = fixed_window.refund
sliding_window_counter.block = fixed_window.block

-- Include: approximate sliding window (a "sliding window counter"): the fixed window's counter
-- plus the previous window's, weighted by how much of the previous window a span of windowMs
-- ending now still covers. O(1) per decision, whatever the traffic. Bounded error: no fixed
-- window holds more than `limit`, so no span of windowMs more than 2 × limit - 1 (a burst at the
-- end of one window, then what the weight lets through just before the next ends); it may also
-- refuse what the exact window would grant, when the previous window's grants came early in it.
-- State: the fixed window's (see fixed-window.lua), whose p is the count of window w - 1 here: a
-- window's first grant carries the count of the one before (c, when that was w). The weighted
-- count is kept in permit·ms, exact in a double while limit × windowMs stays under 2^53 (checked
-- at the edge, as for buckets). A decision is one GET and one write (the fixed window's).
-- A window's first grant starts a new life (the previous window's count kept), so grant ids and
-- the refund ledger are the fixed window's: a grant is given back only within its own window.
-- The key expires when its newest window stops weighing, windowMs after that window ends (or
-- when the block does, if later).
-- sliding_window_counter.check(key, limit, windowMs, permits, now) -> allowed, remaining (< 0 past
--   the limit), retry, reset, state (as fixed_window.check's; while blocked, refused with
--   remaining 0 and retry the longer of the block and the counter's own wait)
-- sliding_window_counter.commit(key, limit, windowMs, permits, now, state) -> remaining, reset,
--   grant id in parts (as fixed_window.commit's); charges even past the limit (penalize)
-- sliding_window_counter.consume(key, limit, windowMs, permits, now) -> check, then commit if
--   allowed, from one read (as fixed_window.consume)
-- refund and block: fixed_window's (the same state means the same things)
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

-- this window's count and the previous one's, from the stored state's (see fixed-window.lua)
local function swc_counts(window, w, c, p, life)
  if life == 0 then return 0, 0 end
  if w == window then return c, p end
  if w == window - 1 then return 0, c end
  return 0, 0
end

-- the verdict on `permits`, `elapsed` ms into the window, with the counts given, blocked until b
local function swc_verdict(limit, windowMs, permits, now, elapsed, current, previous, b)
  local fits, reset = swc_room(limit, windowMs, elapsed, current, previous)
  local allowed = permits <= fits
  local retry = allowed and 0 or swc_wait(limit, windowMs, permits, elapsed, current, previous)
  if b > now then allowed, fits, retry, reset = with_block(b, now, allowed, fits, retry, reset) end
  return allowed, fits, retry, reset
end

-- charges `permits` to the state read (w, life, number, g, b, and its counts); commit's values
local function swc_charge(key, limit, windowMs, permits, now, window, elapsed, w, life, number, g, b, current, previous)
  local counted = current + permits
  if w == window and life > 0 then
    fw_count(key, counted)
  else
    -- a new life: this window's first grant (the previous window's count kept), or the first
    -- since a reset; a block in force stays
    life, number = life_at()
    g = 0
    if b <= now then b = 0 end
    fw_store(key, math.max(2 * windowMs - elapsed, b - now), window, counted, previous, life, number, 0, b, '')
  end
  local fits, reset = swc_room(limit, windowMs, elapsed, counted, previous)
  return fits, reset, life, current, number, g
end

function sliding_window_counter.check(key, limit, windowMs, permits, now)
  local window = math.floor(now / windowMs)
  local v = redis.call('GET', key)
  local w, c, p, life, _, _, b = fw_state(v)
  local current, previous = swc_counts(window, w, c, p, life)
  local allowed, fits, retry, reset = swc_verdict(limit, windowMs, permits, now, now - window * windowMs, current, previous, b)
  return allowed, fits, retry, reset, v
end

function sliding_window_counter.commit(key, limit, windowMs, permits, now, v)
  local window = math.floor(now / windowMs)
  local w, c, p, life, number, g, b = fw_state(v)
  local current, previous = swc_counts(window, w, c, p, life)
  return swc_charge(key, limit, windowMs, permits, now, window, now - window * windowMs, w, life, number, g, b, current, previous)
end

function sliding_window_counter.consume(key, limit, windowMs, permits, now)
  local window = math.floor(now / windowMs)
  local elapsed = now - window * windowMs
  local w, c, p, life, number, g, b = fw_state(redis.call('GET', key))
  local current, previous = swc_counts(window, w, c, p, life)
  local allowed, fits, retry, reset = swc_verdict(limit, windowMs, permits, now, elapsed, current, previous, b)
  if not allowed then return false, fits, retry, reset end
  return true, swc_charge(key, limit, windowMs, permits, now, window, elapsed, w, life, number, g, b, current, previous)
end

sliding_window_counter.refund = fixed_window.refund
sliding_window_counter.block = fixed_window.block

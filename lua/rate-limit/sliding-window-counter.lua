-- Include: approximate sliding window (a "sliding window counter"): the fixed window's counter
-- plus the previous window's, weighted by how much of the previous window a span of windowMs
-- ending now still covers. O(1) per decision, whatever the traffic. Bounded error: no fixed
-- window holds more than `limit`, so no span of windowMs more than 2 × limit - 1 (a burst at the
-- end of one window, then what the weight lets through just before the next ends); it may also
-- refuse what the exact window would grant, when the previous window's grants came early in it.
-- State: the fixed window's hash (see fixed-window.lua: w, c, e, b, g, r<n>) plus
-- p = permits counted in window w - 1. The weighted count is kept in permit·ms, exact in a double
-- while limit × windowMs stays under 2^53 (checked at the edge, as for buckets).
-- A window's first grant starts a new life with p carried over, so grant ids and the refund
-- ledger are the fixed window's: a grant is given back only within its own window. The key
-- expires when its newest window stops weighing, windowMs after that window ends (or when the
-- block does, if later).
-- sliding_window_counter.check(key, limit, windowMs, permits, now) -> allowed, remaining (< 0 past
--   the limit), retry, reset, state (the stored fields; while blocked, refused with remaining 0
--   and retry the longer of the block and the counter's own wait)
-- sliding_window_counter.commit(key, limit, windowMs, permits, now, state) -> remaining, reset,
--   grant id ('<life>:<n>:<permits>'); charges even past the limit (penalize)
-- refund and block: fixed_window's (the same fields mean the same things)
local sliding_window_counter = {}

-- the permits of the current and the previous window, from the stored fields, for `window`
local function swc_counts(state, window)
  local stored = tonumber(state[1])
  if stored == window then return tonumber(state[2]) or 0, tonumber(state[6]) or 0 end
  if stored == window - 1 then return 0, tonumber(state[2]) or 0 end
  return 0, 0
end

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
  local state = redis.call('HMGET', key, 'w', 'c', 'e', 'b', 'g', 'p')
  local current, previous = swc_counts(state, window)
  local fits, reset = swc_room(limit, windowMs, elapsed, current, previous)
  local allowed = permits <= fits
  local retry = allowed and 0 or swc_wait(limit, windowMs, permits, elapsed, current, previous)
  if state[4] then allowed, fits, retry, reset = with_block(tonumber(state[4]), now, allowed, fits, retry, reset) end
  return allowed, fits, retry, reset, state
end

function sliding_window_counter.commit(key, limit, windowMs, permits, now, state)
  local window = math.floor(now / windowMs)
  local elapsed = now - window * windowMs
  local current, previous = swc_counts(state, window)
  local c, grant = current + permits, nil
  if tonumber(state[1]) == window and state[3] then
    grant = state[3] .. ':' .. grant_number(state[2] or '0', state[5]) .. ':' .. int_of(permits)
    c = redis.call('HINCRBY', key, 'c', permits)
  else
    -- a new life: this window's first grant, or the first since a reset; the previous window's
    -- count is carried over, and a block in force stays
    local life, blocked = life_id(), tonumber(state[4])
    if state[2] or state[4] then redis.call('DEL', key) end
    redis.call('HSET', key, 'w', int_of(window), 'c', int_of(c), 'p', int_of(previous), 'e', life)
    local ttl = 2 * windowMs - elapsed
    if blocked and blocked > now then
      redis.call('HSET', key, 'b', int(blocked))
      ttl = math.max(ttl, blocked - now)
    end
    redis.call('PEXPIRE', key, int_of(ttl))
    grant = life .. ':' .. int_of(current) .. ':' .. int_of(permits)
  end
  local fits, reset = swc_room(limit, windowMs, elapsed, c, previous)
  return fits, reset, grant
end

sliding_window_counter.refund = fixed_window.refund
sliding_window_counter.block = fixed_window.block

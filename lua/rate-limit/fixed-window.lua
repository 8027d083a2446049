-- Include: fixed-window limiter, one counter per window aligned to multiples of windowMs since
-- the Unix epoch. State: hash { w = window index, c = permits counted in it, e = life id (see
-- life.lua), b = blocked until (ms), g = permits given back in this life, r<n> = permits already
-- given back of grant n (the refund ledger: one field per refunded grant, gone with the window) }.
-- A grant's number n is c + g just before it: charges raise it, refunds move permits from c to g,
-- so no two grants of a life share one (and a decision writes only c). Before, not after: with
-- nothing given back it is c as read, text already, so a grant formats no number. The key
-- expires when the window ends (or the block, if later), so the counter and its expiry are set in
-- the same atomic step; a later window starts a new life.
-- fixed_window.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, state
--   (state: the stored fields, `w` false unless the window is current; while blocked, refused
--   with remaining 0 and retry the longer of the block and the counter's own wait)
-- fixed_window.commit(key, limit, windowMs, permits, now, state) -> remaining, reset, grant id
--   ('<life>:<n>:<permits>'); charges even past the limit (penalize)
-- fixed_window.refund(key, limit, windowMs, permits, now, grant) -> permits given back: only while
--   the grant's window and life are the stored ones, never more than the grant has left
-- fixed_window.block(key, limit, windowMs, now, untilMs): see hash_block in life.lua
-- (see decide.lua; plain values rather than a table per decision: this runs per request)
local fixed_window = {}

-- a grant's number n (see above) from the stored c and g: c as it is when nothing was given back
local function grant_number(c, given)
  if not given then return c end
  return int(tonumber(c) + tonumber(given))
end

function fixed_window.check(key, limit, windowMs, permits, now)
  local window = math.floor(now / windowMs)
  local endsIn = (window + 1) * windowMs - now
  local state = redis.call('HMGET', key, 'w', 'c', 'e', 'b', 'g')
  local used = 0
  if tonumber(state[1]) == window then used = tonumber(state[2]) else state[1] = false end
  local allowed = used + permits <= limit
  local remaining, retry, reset = limit - used, allowed and 0 or endsIn, used > 0 and endsIn or 0
  if state[4] then allowed, remaining, retry, reset = with_block(tonumber(state[4]), now, allowed, remaining, retry, reset) end
  return allowed, remaining, retry, reset, state
end

function fixed_window.commit(key, limit, windowMs, permits, now, state)
  local window = math.floor(now / windowMs)
  local endsIn = (window + 1) * windowMs - now
  local used = state[1] and tonumber(state[2]) or 0
  if state[1] and state[3] then
    local c = redis.call('HINCRBY', key, 'c', permits)
    return limit - c, endsIn, state[3] .. ':' .. grant_number(state[2], state[5]) .. ':' .. int_of(permits)
  end
  -- a new life: this window's first grant, or the first since a reset. Whatever the key still
  -- holds of an earlier window goes, except a block in force.
  local life, blocked = life_id(), tonumber(state[4])
  if state[2] or state[4] then redis.call('DEL', key) end
  redis.call('HSET', key, 'w', int_of(window), 'c', int_of(used + permits), 'e', life)
  local ttl = endsIn
  if blocked and blocked > now then
    redis.call('HSET', key, 'b', int(blocked))
    ttl = math.max(ttl, blocked - now)
  end
  redis.call('PEXPIRE', key, int_of(ttl))
  return limit - used - permits, endsIn, life .. ':' .. int_of(used) .. ':' .. int_of(permits)
end

function fixed_window.refund(key, limit, windowMs, permits, now, grant)
  local life, n, held = string.match(grant, '^(%d+):(%d+):(%d+)$')
  if not life then return 0 end
  local state = redis.call('HMGET', key, 'w', 'c', 'e', 'r' .. n, 'g')
  if state[3] ~= life or tonumber(state[1]) ~= math.floor(now / windowMs) then return 0 end
  local given = tonumber(state[4]) or 0
  local back = math.min(permits, tonumber(held) - given, tonumber(state[2]))
  if back <= 0 then return 0 end
  redis.call('HSET', key, 'c', int(tonumber(state[2]) - back), 'r' .. n, int(given + back), 'g', int((tonumber(state[5]) or 0) + back))
  return back
end

function fixed_window.block(key, limit, windowMs, now, untilMs)
  hash_block(key, now, untilMs)
end

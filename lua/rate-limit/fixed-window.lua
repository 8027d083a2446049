-- Include: fixed-window limiter, one counter per window aligned to multiples of windowMs since
-- the Unix epoch. State: hash { <w> = permits counted in window w (the field is named by the
-- window's index, so a count of an earlier window is never read as this one's), e = life id (see
-- life.lua), then '+<g>' once g permits were given back in this life, then '!' once a block may
-- be in force (field b = blocked until, ms), r<n> = permits already given back of grant n (the
-- refund ledger: one field per refunded grant, gone with the window) }. A decision reads two
-- fields, its window's and e, and a third (b) only after a '!': as one HMGET of every field, the
-- read cost more than the grant's own write.
-- A grant's number n is c + g just before it: charges raise c, refunds move permits from c to g,
-- so no two grants of a life share one (and a decision writes only c). Its id carries e's life
-- and g, and c as read: decide.lua replies those as they are and the client writes the id out.
-- The key expires when the window ends (or the block, if later), so the counter and its expiry
-- are set in the same atomic step; a later window starts a new life.
-- fixed_window.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, state
--   (state: [1] the window's count as stored (nil: none), [2] e, [3] the block (ms) when e says
--   one may be in force; while blocked, refused with remaining 0 and retry the longer of the block
--   and the counter's own wait)
-- fixed_window.commit(key, limit, windowMs, permits, now, state) -> remaining, reset, then the
--   grant id '<life>[+<g>]:<c>:<permits>' in parts (decide.lua): e as stored (a '!' ending it is
--   no part of the id) and c; charges even past the limit (penalize)
-- fixed_window.refund(key, limit, windowMs, permits, now, grant) -> permits given back: only while
--   the grant's window and life are the stored ones, never more than the grant has left
-- fixed_window.block(key, limit, windowMs, now, untilMs): see hash_block in life.lua
-- (see decide.lua; plain values rather than a table per decision: this runs per request)
local fixed_window = {}

function fixed_window.check(key, limit, windowMs, permits, now)
  local window = math.floor(now / windowMs)
  local endsIn = (window + 1) * windowMs - now
  local state = redis.call('HMGET', key, int_of(window), 'e')
  local used = tonumber(state[1]) or 0
  local allowed = used + permits <= limit
  local remaining, retry, reset = limit - used, allowed and 0 or endsIn, used > 0 and endsIn or 0
  local blocked = block_of(key, state[2])
  -- (written only when there is one: a nil written to a new index still grows the table)
  if blocked then
    state[3] = blocked
    allowed, remaining, retry, reset = with_block(blocked, now, allowed, remaining, retry, reset)
  end
  return allowed, remaining, retry, reset, state
end

function fixed_window.commit(key, limit, windowMs, permits, now, state)
  local window = math.floor(now / windowMs)
  local endsIn = (window + 1) * windowMs - now
  local count, e = state[1], state[2]
  if count and e then
    -- the count as read is still the stored one (a script runs alone): written, not
    -- incremented, which costs Redis less
    local used = tonumber(count)
    redis.call('HSET', key, int_of(window), int(used + permits))
    return limit - used - permits, endsIn, e, used
  end
  -- a new life: this window's first grant, or the first since a reset. Whatever the key still
  -- holds of an earlier window goes, except a block in force.
  local used, life, blocked = tonumber(count) or 0, life_id(), state[3]
  if e or count then redis.call('DEL', key) end
  local ttl = endsIn
  if blocked and blocked > now then
    redis.call('HSET', key, int_of(window), int_of(used + permits), 'e', life .. '!', 'b', int(blocked))
    ttl = math.max(ttl, blocked - now)
  else
    redis.call('HSET', key, int_of(window), int_of(used + permits), 'e', life)
  end
  redis.call('PEXPIRE', key, int_of(ttl))
  return limit - used - permits, endsIn, life, used
end

function fixed_window.refund(key, limit, windowMs, permits, now, grant)
  local life, given, c, held = string.match(grant, '^(%d+)%+?(%d*):(%d+):(%d+)$')
  if not life then return 0 end
  local n = int(tonumber(c) + (tonumber(given) or 0))
  local window = int(math.floor(now / windowMs))
  local state = redis.call('HMGET', key, window, 'e', 'r' .. n)
  if not state[1] then return 0 end
  local stored, g, mark = life_parts(state[2])
  if stored ~= life then return 0 end
  local taken = tonumber(state[3]) or 0
  local back = math.min(permits, tonumber(held) - taken, tonumber(state[1]))
  if back <= 0 then return 0 end
  redis.call('HSET', key, window, int(tonumber(state[1]) - back), 'r' .. n, int(taken + back), 'e', with_given(life, g + back, mark))
  return back
end

function fixed_window.block(key, limit, windowMs, now, untilMs)
  hash_block(key, now, untilMs)
end

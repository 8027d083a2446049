-- Include: token bucket holding `limit` tokens, refilled continuously at limit / windowMs.
-- Exact integer arithmetic: the state is kept in units of 1 / windowMs token, so a full bucket is
-- limit * windowMs units, each ms adds `limit` units and a permit costs windowMs units (callers
-- keep limit * windowMs <= 2^53). State: hash { u = units, t = ms of last update, n = permits
-- ever charged in this life (numbers its grants), e = life id (see life.lua), b = blocked until
-- (ms), r<n> = permits already given back of grant n (the refund ledger) }. A life ends when the
-- bucket is full again: the key expires then, which is the same as having no key, and a refund
-- of an earlier life's grant gives nothing (tokens given back to a bucket that has been full
-- since would grant more than a bucket that never made that grant).
-- token_bucket.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, state
--   (state: the stored fields, [1] replaced by the units now; while blocked, refused with
--   remaining 0 and retry the longer of the block and the bucket's own wait)
-- token_bucket.commit(key, limit, windowMs, permits, now, state) -> remaining, reset, grant id
--   ('<life>:<n>:<permits>'); charges even past empty (penalize: units go below 0)
-- token_bucket.refund(key, limit, windowMs, permits, now, grant) -> whole permits given back: the
--   tokens return to the bucket, which never holds more than `limit`, while the grant's life lasts
-- token_bucket.block(key, limit, windowMs, now, untilMs): see hash_block in life.lua
local token_bucket = {}

-- the units a bucket holds now, from its stored units and time (full when it has none)
local function tb_units(full, limit, units, at, now)
  if not units then return full end
  return math.min(full, tonumber(units) + math.max(0, now - tonumber(at)) * limit)
end

function token_bucket.check(key, limit, windowMs, permits, now)
  local full = limit * windowMs
  local state = redis.call('HMGET', key, 'u', 't', 'n', 'e', 'b')
  local units = tb_units(full, limit, state[1], state[2], now)
  state[1] = units
  local cost = permits * windowMs
  local allowed = units >= cost
  local remaining, retry, reset = math.floor(units / windowMs), 0, math.ceil((full - units) / limit)
  if not allowed then retry = math.ceil((cost - units) / limit) end
  allowed, remaining, retry, reset = with_block(tonumber(state[5]), now, allowed, remaining, retry, reset)
  return allowed, remaining, retry, reset, state
end

function token_bucket.commit(key, limit, windowMs, permits, now, state)
  local full = limit * windowMs
  local units = state[1]
  local left = units - permits * windowMs
  local untilFull = math.ceil((full - left) / limit)
  local life, n = state[4], nil
  local blocked = tonumber(state[5])
  if units < full and life then
    n = tonumber(state[3]) + permits
    redis.call('HSET', key, 'u', int(left), 't', int(now), 'n', int(n))
  else
    -- a new life: the bucket was full. What the key still holds of the last one goes, except a
    -- block in force.
    life, n = life_id(), permits
    if state[2] or state[5] then redis.call('DEL', key) end
    redis.call('HSET', key, 'u', int(left), 't', int(now), 'n', int(n), 'e', life)
    if blocked and blocked > now then redis.call('HSET', key, 'b', int(blocked)) end
  end
  local ttl = untilFull
  if blocked and blocked > now then ttl = math.max(ttl, blocked - now) end
  redis.call('PEXPIRE', key, int(ttl))
  return math.floor(left / windowMs), untilFull, life .. ':' .. int(n) .. ':' .. int(permits)
end

function token_bucket.refund(key, limit, windowMs, permits, now, grant)
  local life, n, held = string.match(grant, '^(%d+):(%d+):(%d+)$')
  if not life then return 0 end
  local state = redis.call('HMGET', key, 'u', 't', 'e', 'b', 'r' .. n)
  local full = limit * windowMs
  local units = tb_units(full, limit, state[1], state[2], now)
  if state[3] ~= life or units >= full then return 0 end
  local given = tonumber(state[5]) or 0
  local want = math.min(permits, tonumber(held) - given)
  if want <= 0 then return 0 end
  local back = math.min(want * windowMs, full - units)
  local whole = math.floor(back / windowMs)
  local blocked = tonumber(state[4])
  if units + back >= full then
    -- full again: this life ends, and with it the ledger (a block in force stays)
    redis.call('DEL', key)
    if blocked and blocked > now then
      redis.call('HSET', key, 'b', int(blocked))
      redis.call('PEXPIRE', key, int(blocked - now))
    end
    return whole
  end
  local ttl = math.ceil((full - units - back) / limit)
  if blocked and blocked > now then ttl = math.max(ttl, blocked - now) end
  redis.call('HSET', key, 'u', int(units + back), 't', int(now), 'r' .. n, int(given + whole))
  redis.call('PEXPIRE', key, int(ttl))
  return whole
end

function token_bucket.block(key, limit, windowMs, now, untilMs)
  hash_block(key, now, untilMs)
end

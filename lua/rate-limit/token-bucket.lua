-- Include: token bucket holding `limit` tokens, refilled continuously at limit / windowMs.
-- Exact integer arithmetic: the state is kept in units of 1 / windowMs token, so a full bucket is
-- limit * windowMs units, each ms adds `limit` units and a permit costs windowMs units (callers
-- keep limit * windowMs <= 2^53). State: hash { u = units, t = ms of last update, e = life id
-- (see life.lua), b = blocked until (ms), g = units given back by refunds in this life,
-- r<grant> = permits already given back of that grant (the refund ledger; see tb_sweep), s = the
-- ledger size that triggers its next sweep }. A grant is named by
-- its time, the units left after it and g then: two grants of one ms leave different units, or
-- a refund between them changed g. A life ends when the bucket is full again: the key expires then, which
-- is the same as having no key, and a refund of an earlier life's grant gives nothing.
-- A refund gives back no more than the bucket without that grant would hold over this one: a
-- bucket that came near full since the grant lost refill that the one without it lost too (it
-- was capped at full). The grant id carries the units left after it, its time and the units
-- given back by then, which bound every level the bucket can have reached since (refill and
-- refunds only raise it); tokens come back only up to full minus that bound (all of them when
-- nothing was charged since; none once the bucket may have been full).
-- token_bucket.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, state
--   (state: the stored fields, [1] replaced by the units now; while blocked, refused with
--   remaining 0 and retry the longer of the block and the bucket's own wait)
-- token_bucket.commit(key, limit, windowMs, permits, now, state) -> remaining, reset, grant id
--   ('<life>:<permits>:<ms>:<units left>:<units given back before>'); charges even past empty
--   (penalize: units go below 0)
-- token_bucket.refund(key, limit, windowMs, permits, now, grant) -> permits given back: whole
--   tokens return to the bucket, which never holds more than `limit`, while the grant's life lasts
-- token_bucket.block(key, limit, windowMs, now, untilMs): see hash_block in life.lua
local token_bucket = {}

-- the units a bucket holds now, from its stored units and time (full when it has none)
local function tb_units(full, limit, units, at, now)
  if not units then return full end
  return math.min(full, tonumber(units) + math.max(0, now - tonumber(at)) * limit)
end

-- A bucket that is never full again keeps its life, and its ledger would keep an entry per
-- refunded grant. An entry is dead once its grant's bound (see refund) reaches full: refill alone
-- gets there within windowMs of the grant, and no refund of it can give anything after. The
-- dead go when the ledger has doubled since the last sweep (field s: the size that triggers the
-- next), so a sweep's cost is spread over the refunds that grew it.
local function tb_sweep(key, limit, full, now)
  local fields = redis.call('HLEN', key)
  if fields <= (tonumber(redis.call('HGET', key, 's')) or 32) then return end
  local dead, live = {}, 0
  local all = redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    local field = all[i]
    local at, after = string.match(field, '^r(%d+):(%-?%d+):')
    if at and tonumber(after) + math.max(0, now - tonumber(at)) * limit >= full then
      dead[#dead + 1] = field
      if #dead == 1000 then
        redis.call('HDEL', key, unpack(dead))
        dead = {}
      end
    elseif at then
      live = live + 1
    end
  end
  if #dead > 0 then redis.call('HDEL', key, unpack(dead)) end
  redis.call('HSET', key, 's', int(math.max(32, 2 * (live + 6))))
end

function token_bucket.check(key, limit, windowMs, permits, now)
  local full = limit * windowMs
  local state = redis.call('HMGET', key, 'u', 't', 'e', 'b', 'g')
  local units = tb_units(full, limit, state[1], state[2], now)
  state[1] = units
  local cost = permits * windowMs
  local allowed = units >= cost
  local remaining, retry, reset = math.floor(units / windowMs), 0, math.ceil((full - units) / limit)
  if not allowed then retry = math.ceil((cost - units) / limit) end
  if state[4] then allowed, remaining, retry, reset = with_block(tonumber(state[4]), now, allowed, remaining, retry, reset) end
  return allowed, remaining, retry, reset, state
end

function token_bucket.commit(key, limit, windowMs, permits, now, state)
  local full = limit * windowMs
  local units = state[1]
  local left = units - permits * windowMs
  local untilFull = math.ceil((full - left) / limit)
  local life, given = state[3], tonumber(state[5]) or 0
  local blocked = tonumber(state[4])
  local units_left = int(left)
  if units < full and life then
    redis.call('HSET', key, 'u', units_left, 't', int_of(now))
  else
    -- a new life: the bucket was full. What the key still holds of the last one goes, except a
    -- block in force.
    life, given = life_id(), 0
    if state[2] or state[4] then redis.call('DEL', key) end
    redis.call('HSET', key, 'u', units_left, 't', int_of(now), 'e', life)
    if blocked and blocked > now then redis.call('HSET', key, 'b', int(blocked)) end
  end
  local ttl = untilFull
  if blocked and blocked > now then ttl = math.max(ttl, blocked - now) end
  redis.call('PEXPIRE', key, int_of(ttl))
  return math.floor(left / windowMs), untilFull, life .. ':' .. int_of(permits) .. ':' .. int_of(now) .. ':' .. units_left .. ':' .. int_of(given)
end

function token_bucket.refund(key, limit, windowMs, permits, now, grant)
  local life, held, n, at, after, before = string.match(grant, '^(%d+):(%d+):((%d+):(%-?%d+):(%d+))$')
  if not life then return 0 end
  local state = redis.call('HMGET', key, 'u', 't', 'e', 'b', 'r' .. n, 'g')
  local full = limit * windowMs
  local units = tb_units(full, limit, state[1], state[2], now)
  if state[3] ~= life or units >= full then return 0 end
  local given, ledger = tonumber(state[6]) or 0, tonumber(state[5]) or 0
  local want = math.min(permits, tonumber(held) - ledger)
  if want <= 0 then return 0 end
  -- the highest the bucket can have been since the grant (>= units now; equal when nothing was
  -- charged since). Up to full: all asked for when that is the bucket now (the bucket without
  -- the grant is full too: it is as if the grant was never made); else whole tokens only, as a
  -- fraction given back would let a later request through that the bucket without it refuses.
  local peak = tonumber(after) + math.max(0, now - tonumber(at)) * limit + given - tonumber(before)
  if peak >= full then return 0 end
  local whole, back = want, want * windowMs
  if back > full - peak then
    if peak <= units then
      back = full - units
    else
      whole = math.floor((full - peak) / windowMs)
      back = whole * windowMs
    end
  end
  if whole <= 0 then return 0 end
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
  redis.call('HSET', key, 'u', int(units + back), 't', int(now), 'r' .. n, int(ledger + whole), 'g', int(given + back))
  redis.call('PEXPIRE', key, int(ttl))
  if ledger == 0 then tb_sweep(key, limit, full, now) end
  return whole
end

function token_bucket.block(key, limit, windowMs, now, untilMs)
  hash_block(key, now, untilMs)
end

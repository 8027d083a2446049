-- Include: token bucket holding `limit` tokens, refilled continuously at limit / windowMs.
-- Exact integer arithmetic: the state is kept in units of 1 / windowMs token, so a full bucket is
-- limit * windowMs units, each ms adds `limit` units and a permit costs windowMs units (callers
-- keep limit * windowMs <= 2^53). State: hash { u = units, t = ms of last update, e = life id
-- (see life.lua), then '+<g>' once g units were given back by refunds in this life, then '!' once
-- a block may be in force (b = blocked until, ms), r<grant> = permits already given back of that
-- grant (the refund ledger; see tb_sweep), s = the ledger size that triggers its next sweep }. A
-- decision reads three fields (u, t, e). A grant is named by e's life and g, its time and the
-- units left after it: two grants of one ms leave different units, or a refund between them
-- changed g. A life ends when the bucket is full again: the key expires then, which is the same
-- as having no key, and a refund of an earlier life's grant gives nothing. (Its expiry is not
-- rounded up to slices as the sliding window's is: on many keys a bucket is mostly full again
-- between its grants, and a key that outlived its life would make each read convert three values
-- where a gone key converts none.) A grant on a bucket full again that still has its key (a
-- clock's step) starts a new life in place, unless a refund or block is in it: then the key goes
-- first.
-- A refund gives back no more than the bucket without that grant would hold over this one: a
-- bucket that came near full since the grant lost refill that the one without it lost too (it
-- was capped at full). The grant id carries the units left after it, its time and the units
-- given back by then, which bound every level the bucket can have reached since (refill and
-- refunds only raise it); tokens come back only up to full minus that bound (all of them when
-- nothing was charged since; none once the bucket may have been full).
-- token_bucket.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, state
--   (state: [1], [2], [3] u, t, e as stored, [4] the block (ms) e announces;
--   while blocked, refused with remaining 0 and retry the longer of the block and the bucket's own
--   wait)
-- token_bucket.commit(key, limit, windowMs, permits, now, state) -> remaining, reset, then the
--   grant id '<life>[+<g>]:<permits>:<ms>:<units left>' in parts (decide.lua): e as stored (a '!'
--   ending it is no part of the id) and the units left (ms: the call's now); charges even past
--   empty (penalize: units go below 0)
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

-- the ms until a bucket of `units` is full (its key's need: see expire_in_slices)
local function tb_until_full(full, limit, units)
  return math.ceil((full - units) / limit)
end

function token_bucket.check(key, limit, windowMs, permits, now)
  local full = limit * windowMs
  local state = redis.call('HMGET', key, 'u', 't', 'e')
  local units = tb_units(full, limit, state[1], state[2], now)
  local cost = permits * windowMs
  local allowed = units >= cost
  local remaining, retry, reset = math.floor(units / windowMs), 0, tb_until_full(full, limit, units)
  if not allowed then retry = math.ceil((cost - units) / limit) end
  local blocked = block_of(key, state[3])
  -- (written only when there is one: a nil written to a new index still grows the table)
  if blocked then
    state[4] = blocked
    allowed, remaining, retry, reset = with_block(blocked, now, allowed, remaining, retry, reset)
  end
  return allowed, remaining, retry, reset, state
end

function token_bucket.commit(key, limit, windowMs, permits, now, state)
  local full = limit * windowMs
  local units, e, blocked = tb_units(full, limit, state[1], state[2], now), state[3], state[4]
  local left = units - permits * windowMs
  local untilFull = tb_until_full(full, limit, left)
  local units_left = int(left)
  local life = e
  if units < full and e then
    redis.call('HSET', key, 'u', units_left, 't', int_of(now))
  else
    -- a new life: the bucket was full. A key with refunds or a block in it is deleted first (a
    -- block in force stays); else its three fields are rewritten in place.
    life = life_id()
    if e and (string.byte(e, -1) == 33 or string.find(e, '+', 1, true)) then
      redis.call('DEL', key)
    end
    if blocked and blocked > now then
      redis.call('HSET', key, 'u', units_left, 't', int_of(now), 'e', life .. '!', 'b', int(blocked))
    else
      redis.call('HSET', key, 'u', units_left, 't', int_of(now), 'e', life)
    end
  end
  local ttl = untilFull
  if blocked and blocked > now then ttl = math.max(ttl, blocked - now) end
  redis.call('PEXPIRE', key, int(ttl))
  return math.floor(left / windowMs), untilFull, life, left
end

function token_bucket.refund(key, limit, windowMs, permits, now, grant)
  local life, before, held, at, after = string.match(grant, '^(%d+)%+?(%d*):(%d+):(%d+):(%-?%d+)$')
  if not life then return 0 end
  before = tonumber(before) or 0
  local n = at .. ':' .. after .. ':' .. int(before)
  local state = redis.call('HMGET', key, 'u', 't', 'e', 'b', 'r' .. n)
  local full = limit * windowMs
  local units = tb_units(full, limit, state[1], state[2], now)
  local stored, given, mark = life_parts(state[3])
  if stored ~= life or units >= full then return 0 end
  local ledger = tonumber(state[5]) or 0
  local want = math.min(permits, tonumber(held) - ledger)
  if want <= 0 then return 0 end
  -- the highest the bucket can have been since the grant (>= units now; equal when nothing was
  -- charged since). Up to full: all asked for when that is the bucket now (the bucket without
  -- the grant is full too: it is as if the grant was never made); else whole tokens only, as a
  -- fraction given back would let a later request through that the bucket without it refuses.
  local peak = tonumber(after) + math.max(0, now - tonumber(at)) * limit + given - before
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
  local blocked = mark == '!' and tonumber(state[4]) or nil
  if units + back >= full then
    -- full again: this life ends, and with it the ledger (a block in force stays)
    redis.call('DEL', key)
    if blocked and blocked > now then
      redis.call('HSET', key, 'b', int(blocked), 'e', '!')
      redis.call('PEXPIRE', key, int(blocked - now))
    end
    return whole
  end
  local needed = now + tb_until_full(full, limit, units + back)
  if blocked and blocked > now then needed = math.max(needed, blocked) end
  redis.call('HSET', key, 'u', int(units + back), 't', int(now), 'r' .. n, int(ledger + whole), 'e', with_given(life, given + back, mark))
  expire_in_slices(key, needed, now, windowMs, nil)
  if ledger == 0 then tb_sweep(key, limit, full, now) end
  return whole
end

function token_bucket.block(key, limit, windowMs, now, untilMs)
  hash_block(key, now, untilMs)
end

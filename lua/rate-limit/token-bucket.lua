-- Include: token bucket holding `limit` tokens, refilled continuously at limit / windowMs.
-- Exact integer arithmetic: the state is kept in units of 1 / windowMs token, so a full bucket is
-- limit * windowMs units, each ms adds `limit` units and a permit costs windowMs units (callers
-- keep limit * windowMs <= 2^53). State: a string, six doubles packed (TB_STATE) { u = units, t =
-- ms of last update, life = its µs and number (see life_at in life.lua; 0, 0: no life, a key that
-- holds only a block), g = units given back by refunds in this life, b = blocked until (ms; 0:
-- none) }, then the refund ledger: per refunded grant still able to take some back, four doubles
-- (TB_ENTRY) { its time, the units left after it, g before it, permits given back of it }. A
-- decision is one GET and one SET with its expiry, and never makes a string but the one it writes:
-- a hash of text fields cost a fifth more (a command, and text written and read per field). A
-- grant is named by its life and g, its time and the units left after it: two grants of one ms
-- leave different units, or a refund between them changed g. A life ends when the bucket is full
-- again: the key expires then, which is the same as having no key, and a refund of an earlier
-- life's grant gives nothing. A grant on a bucket full again that still has its key (a clock's
-- step) starts a new life in place: the ledger goes, a block in force stays.
-- A refund gives back no more than the bucket without that grant would hold over this one: a
-- bucket that came near full since the grant lost refill that the one without it lost too (it
-- was capped at full). The grant id carries the units left after it, its time and the units
-- given back by then, which bound every level the bucket can have reached since (refill and
-- refunds only raise it); tokens come back only up to full minus that bound (all of them when
-- nothing was charged since; none once the bucket may have been full).
-- token_bucket.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, state
--   (state: the key's value as stored, false when none; while blocked, refused with remaining 0
--   and retry the longer of the block and the bucket's own wait)
-- token_bucket.commit(key, limit, windowMs, permits, now, state) -> remaining, reset, then the
--   grant id '<life>[+<g>]:<permits>:<ms>:<units left>' in parts (decide.lua): the life's µs, the
--   units left (ms: the call's now), the life's number and g; charges even past empty (penalize:
--   units go below 0)
-- token_bucket.consume(key, limit, windowMs, permits, now) -> check, then commit if allowed, from
--   one read (as fixed_window.consume)
-- token_bucket.refund(key, limit, windowMs, permits, now, grant) -> permits given back: whole
--   tokens return to the bucket, which never holds more than `limit`, while the grant's life lasts
-- token_bucket.block(key, limit, windowMs, now, untilMs) -> the bucket refuses until untilMs (b); a
--   longer block stays
local token_bucket = {}
local TB_STATE, TB_STATE_BYTES, TB_ENTRY, TB_ENTRY_BYTES = '>dddddd', 48, '>dddd', 32

-- the units a bucket holds now: full when it has no life
local function tb_units(full, limit, u, t, life, now)
  if life == 0 then return full end
  return math.min(full, u + math.max(0, now - t) * limit)
end

-- the ms until a bucket of `units` is full: its key's expiry (or the block's, if later)
local function tb_until_full(full, limit, units)
  return math.ceil((full - units) / limit)
end

-- writes the state, the ledger `entries` (packed) after it; the key lives `ttl` ms
local function tb_store(key, ttl, u, t, life, number, g, b, entries)
  redis.call('SET', key, struct.pack(TB_STATE, u, t, life, number, g, b) .. entries, 'PX', int(ttl))
end

-- the fields of a stored value (none: a bucket without a life, so full)
local function tb_state(v)
  if not v then return 0, 0, 0, 0, 0, 0 end
  return struct.unpack(TB_STATE, v)
end

-- the verdict on `permits` when the bucket holds `units`, blocked until b
local function tb_verdict(full, limit, windowMs, permits, now, units, b)
  local cost = permits * windowMs
  local allowed = units >= cost
  local remaining, retry, reset = math.floor(units / windowMs), 0, tb_until_full(full, limit, units)
  if not allowed then retry = math.ceil((cost - units) / limit) end
  if b > now then allowed, remaining, retry, reset = with_block(b, now, allowed, remaining, retry, reset) end
  return allowed, remaining, retry, reset
end

-- charges `permits` to the bucket read (v, holding `units` now, and its life, number, g, b);
-- commit's values
local function tb_charge(key, full, limit, windowMs, permits, now, v, units, life, number, g, b)
  local left = units - permits * windowMs
  local untilFull = tb_until_full(full, limit, left)
  local ttl = untilFull
  if b > now then ttl = math.max(ttl, b - now) else b = 0 end
  if units < full then
    tb_store(key, ttl, left, now, life, number, g, b, #v > TB_STATE_BYTES and string.sub(v, TB_STATE_BYTES + 1) or '')
  else
    -- a new life: the bucket was full (a ledger goes with the life it was of)
    life, number = life_at()
    g = 0
    tb_store(key, ttl, left, now, life, number, 0, b, '')
  end
  return math.floor(left / windowMs), untilFull, life, left, number, g
end

function token_bucket.check(key, limit, windowMs, permits, now)
  local full = limit * windowMs
  local v = redis.call('GET', key)
  local u, t, life, _, _, b = tb_state(v)
  local allowed, remaining, retry, reset = tb_verdict(full, limit, windowMs, permits, now, tb_units(full, limit, u, t, life, now), b)
  return allowed, remaining, retry, reset, v
end

function token_bucket.commit(key, limit, windowMs, permits, now, v)
  local full = limit * windowMs
  local u, t, life, number, g, b = tb_state(v)
  return tb_charge(key, full, limit, windowMs, permits, now, v, tb_units(full, limit, u, t, life, now), life, number, g, b)
end

function token_bucket.consume(key, limit, windowMs, permits, now)
  local full = limit * windowMs
  local v = redis.call('GET', key)
  local u, t, life, number, g, b = tb_state(v)
  local units = tb_units(full, limit, u, t, life, now)
  local allowed, remaining, retry, reset = tb_verdict(full, limit, windowMs, permits, now, units, b)
  if not allowed then return false, remaining, retry, reset end
  return true, tb_charge(key, full, limit, windowMs, permits, now, v, units, life, number, g, b)
end

function token_bucket.refund(key, limit, windowMs, permits, now, grant)
  local id, before, held, at, after = string.match(grant, '^(%d+)%+?(%d*):(%d+):(%d+):(%-?%d+)$')
  if not id then return 0 end
  before, held, at, after = tonumber(before) or 0, tonumber(held), tonumber(at), tonumber(after)
  local v = redis.call('GET', key)
  if not v then return 0 end
  local u, t, life, number, given, b = struct.unpack(TB_STATE, v)
  local full = limit * windowMs
  local units = tb_units(full, limit, u, t, life, now)
  if life == 0 or units >= full or life_text(life, number) ~= id then return 0 end
  -- The ledger, read whole and written back without its dead: an entry is dead once its
  -- grant's bound (below) reaches full, which refill alone does within windowMs of the grant;
  -- no refund of it can give anything after. So it holds the refunds of one window at most.
  local ledger, entries = 0, {}
  for i = TB_STATE_BYTES + 1, #v, TB_ENTRY_BYTES do
    local e_at, e_after, e_before, e_back = struct.unpack(TB_ENTRY, v, i)
    if e_at == at and e_after == after and e_before == before then
      ledger = e_back
    elseif e_after + math.max(0, now - e_at) * limit < full then
      entries[#entries + 1] = string.sub(v, i, i + TB_ENTRY_BYTES - 1)
    end
  end
  local want = math.min(permits, held - ledger)
  if want <= 0 then return 0 end
  -- the highest the bucket can have been since the grant (>= units now; equal when nothing was
  -- charged since). Up to full: all asked for when that is the bucket now (the bucket without
  -- the grant is full too: it is as if the grant was never made); else whole tokens only, as a
  -- fraction given back would let a later request through that the bucket without it refuses.
  local peak = after + math.max(0, now - at) * limit + given - before
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
  if b <= now then b = 0 end
  if units + back >= full then
    -- full again: this life ends, and with it the ledger (a block in force stays)
    if b > 0 then
      tb_store(key, b - now, 0, 0, 0, 0, 0, b, '')
    else
      redis.call('DEL', key)
    end
    return whole
  end
  local ttl = tb_until_full(full, limit, units + back)
  if b > 0 then ttl = math.max(ttl, b - now) end
  entries[#entries + 1] = struct.pack(TB_ENTRY, at, after, before, ledger + whole)
  tb_store(key, ttl, units + back, now, life, number, given + back, b, table.concat(entries))
  return whole
end

function token_bucket.block(key, limit, windowMs, now, untilMs)
  local v = redis.call('GET', key)
  local u, t, life, number, g, b = tb_state(v)
  if b >= untilMs then return end
  -- the key lives as long as the bucket needs it, or the block if longer
  local existed = v and redis.call('PTTL', key) or 0
  tb_store(key, math.max(existed, untilMs - now), u, t, life, number, g, untilMs, v and string.sub(v, TB_STATE_BYTES + 1) or '')
end

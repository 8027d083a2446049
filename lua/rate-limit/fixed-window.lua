-- Include: fixed-window limiter, one counter per window aligned to multiples of windowMs since
-- the Unix epoch. State: a string, seven doubles packed (FW_STATE) { w = the window its count is
-- of (its index, so a count of an earlier window is never read as this one's), c = permits
-- counted in window w, p = the count of window w - 1 (the sliding window counter's; 0 here),
-- life = its µs and number (see life_at in life.lua; 0, 0: no life, a key that holds only a
-- block), g = permits given back by refunds in this life, b = blocked until (ms; 0: none) }, then
-- the refund ledger: per refunded grant, two doubles (FW_ENTRY) { its number n, permits given
-- back of it }, gone with the window. A decision is one GET and one write, and makes no string
-- but the one it writes: a hash of text fields cost more (text written and read per field, a
-- string per life). The window's first grant SETs the whole state; the others write only c, in
-- place (SETRANGE: the 8 bytes that change, where a SET of all cost a tenth more of the
-- decision).
-- A grant's number n is c + g just before it: charges raise c, refunds move permits from c to g,
-- so no two grants of a life share one. Its id carries the life and g, and c as read: decide.lua
-- replies those as numbers and the client writes the id out.
-- The key expires when the window ends (or the block, if later), set by the window's first grant
-- with the counter in one write and kept by the others (SETRANGE, or SET KEEPTTL); a later
-- window starts a new life.
-- fixed_window.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, state
--   (state: the key's value as stored, false when none; while blocked, refused with remaining 0
--   and retry the longer of the block and the counter's own wait)
-- fixed_window.commit(key, limit, windowMs, permits, now, state) -> remaining, reset, then the
--   grant id '<life>[+<g>]:<c>:<permits>' in parts (decide.lua): the life's µs, c, the life's
--   number and g; charges even past the limit (penalize)
-- fixed_window.consume(key, limit, windowMs, permits, now) -> check, then commit if allowed, from
--   one read of the state: true and commit's values, or false, remaining, retry, reset (a stack of
--   one limit, which most are, decides this way: a second read of the state cost a tenth of it)
-- fixed_window.refund(key, limit, windowMs, permits, now, grant) -> permits given back: only while
--   the grant's window and life are the stored ones, never more than the grant has left
-- fixed_window.block(key, limit, windowMs, now, untilMs) -> refuses until untilMs (b); a longer
--   block stays
-- fw_state(v) -> the fields of a stored value (all 0 for none); fw_store(key, ttl, w, c, p, life,
--   number, g, b, ledger) writes them, the key living `ttl` ms more (nil: as it does); fw_count(key,
--   c) writes c alone, in place: the sliding window counter keeps the same state
--   (sliding-window-counter.lua)
-- (see decide.lua; plain values rather than a table per decision: this runs per request)
local fixed_window = {}
local FW_STATE, FW_STATE_BYTES, FW_ENTRY, FW_ENTRY_BYTES = '>ddddddd', 56, '>dd', 16

local function fw_state(v)
  if not v then return 0, 0, 0, 0, 0, 0, 0 end
  return struct.unpack(FW_STATE, v)
end

local function fw_store(key, ttl, w, c, p, life, number, g, b, ledger)
  local value = struct.pack(FW_STATE, w, c, p, life, number, g, b) .. ledger
  if ttl then
    redis.call('SET', key, value, 'PX', int(ttl))
  else
    redis.call('SET', key, value, 'KEEPTTL')
  end
end

-- (c is the second double: bytes 8 to 15 from 0, as SETRANGE counts)
local function fw_count(key, c)
  redis.call('SETRANGE', key, 8, struct.pack('>d', c))
end

-- the ledger after the state in `v` ('' when none)
local function fw_ledger(v)
  if #v > FW_STATE_BYTES then return string.sub(v, FW_STATE_BYTES + 1) end
  return ''
end

-- the verdict on `permits` when `used` of the window are counted, blocked until b
local function fw_verdict(limit, permits, now, endsIn, used, b)
  local allowed = used + permits <= limit
  local remaining, retry, reset = limit - used, allowed and 0 or endsIn, used > 0 and endsIn or 0
  if b > now then allowed, remaining, retry, reset = with_block(b, now, allowed, remaining, retry, reset) end
  return allowed, remaining, retry, reset
end

-- charges `permits` to the state read (w, c, life, number, g, b); commit's values
local function fw_charge(key, limit, permits, now, window, endsIn, w, c, life, number, g, b)
  if w == window and life > 0 then
    fw_count(key, c + permits)
    return limit - c - permits, endsIn, life, c, number, g
  end
  -- a new life: this window's first grant, or the first since a reset. Whatever the key still
  -- holds of an earlier window goes, except a block in force.
  life, number = life_at()
  if b <= now then b = 0 end
  fw_store(key, math.max(endsIn, b - now), window, permits, 0, life, number, 0, b, '')
  return limit - permits, endsIn, life, 0, number, 0
end

function fixed_window.check(key, limit, windowMs, permits, now)
  local window = math.floor(now / windowMs)
  local v = redis.call('GET', key)
  local w, c, _, _, _, _, b = fw_state(v)
  local allowed, remaining, retry, reset = fw_verdict(limit, permits, now, (window + 1) * windowMs - now, w == window and c or 0, b)
  return allowed, remaining, retry, reset, v
end

function fixed_window.commit(key, limit, windowMs, permits, now, v)
  local window = math.floor(now / windowMs)
  local w, c, _, life, number, g, b = fw_state(v)
  return fw_charge(key, limit, permits, now, window, (window + 1) * windowMs - now, w, c, life, number, g, b)
end

function fixed_window.consume(key, limit, windowMs, permits, now)
  local window = math.floor(now / windowMs)
  local endsIn = (window + 1) * windowMs - now
  local w, c, _, life, number, g, b = fw_state(redis.call('GET', key))
  local allowed, remaining, retry, reset = fw_verdict(limit, permits, now, endsIn, w == window and c or 0, b)
  if not allowed then return false, remaining, retry, reset end
  return true, fw_charge(key, limit, permits, now, window, endsIn, w, c, life, number, g, b)
end

function fixed_window.refund(key, limit, windowMs, permits, now, grant)
  local id, given, counted, held = string.match(grant, '^(%d+)%+?(%d*):(%d+):(%d+)$')
  if not id then return 0 end
  local n = tonumber(counted) + (tonumber(given) or 0)
  local v = redis.call('GET', key)
  if not v then return 0 end
  local w, c, p, life, number, g, b = struct.unpack(FW_STATE, v)
  if life == 0 or w ~= math.floor(now / windowMs) or life_text(life, number) ~= id then return 0 end
  local taken, entries = 0, {}
  for i = FW_STATE_BYTES + 1, #v, FW_ENTRY_BYTES do
    local entry, back = struct.unpack(FW_ENTRY, v, i)
    if entry == n then
      taken = back
    else
      entries[#entries + 1] = string.sub(v, i, i + FW_ENTRY_BYTES - 1)
    end
  end
  local back = math.min(permits, tonumber(held) - taken, c)
  if back <= 0 then return 0 end
  entries[#entries + 1] = struct.pack(FW_ENTRY, n, taken + back)
  fw_store(key, nil, w, c - back, p, life, number, g + back, b, table.concat(entries))
  return back
end

function fixed_window.block(key, limit, windowMs, now, untilMs)
  local v = redis.call('GET', key)
  local w, c, p, life, number, g, b = fw_state(v)
  if b >= untilMs then return end
  -- the key lives as long as its window needs it, or the block if longer
  local existed = v and redis.call('PTTL', key) or 0
  fw_store(key, math.max(existed, untilMs - now), w, c, p, life, number, g, untilMs, v and fw_ledger(v) or '')
end

-- Include: one expiring hash, the state every ExpiringHash script shares.
-- H (KEYS[1]) holds the user's fields plus a reserved meta field "" =
--   "<mode>,<base>,<next>,<max>,<persistent>,<indexed>":
--   mode        'i' (index: the library keeps each field's expiry) or 'n' (native: HPEXPIREAT)
--   base        ms; index-mode expiries are stored as 32-bit offsets from it
--   next        ms; no field present expires before it (-1: no field has a ttl)
--   max         ms; no field present expires after it (-1: none has a ttl); H itself expires then
--   persistent  how many fields have no ttl (while > 0, H carries no expiry)
--   indexed     1 once H outgrew SMALL fields: expiries are then listed in B by 10 s bucket
-- Index mode prefixes each value with 4 bytes, big-endian: the expiry's offset from base,
-- NO_TTL, or LONG followed by an 8-byte absolute expiry. Four bytes keep a 60-byte value inside
-- the 64-byte listpack limit, which is where a hash beats one string key per item on memory.
-- B (KEYS[2]) exists only for indexed hashes: field "<bucket>" = number of chunks, fields
-- "<bucket>.<k>" = names (2-byte length + bytes) of fields that expire in that bucket. A chunk
-- stays near CHUNK bytes so appends and sweeps cost bounded work. A name may be stale (deleted
-- or re-set since); sweeps check every name against the field itself.
-- A compact H holds one field with a ttl and nothing else, as a string: the field's length (2 bytes,
-- big-endian: a field may hold any byte, NUL included), the field, the value as given (both modes);
-- H's own expiry is the field's. It costs what one string key per item does (the meta field alone
-- would add a third), and unlike a one-field hash it stays that small past 64-byte values, where a
-- hash leaves the listpack encoding. set.lua makes one when it creates H, and expands it (into the
-- layout above, in the writer's mode) when a second field comes. A compact H written before (a hash
-- of one field, no meta field) is read as one, and rewritten as a string by its next write.
-- N (KEYS[3]) holds armed expiry notifications: "<expiry>:<field>" -> JSON { q = queue, v = value }.
-- The expiry in the name makes each arming distinct: deleting or re-setting a live field disarms
-- its own, never one already due. The value is kept here because native mode loses it at expiry.
--- @include "../includes/server-time.lua"

local rcall = redis.call
local H, B, N = KEYS[1], KEYS[2], KEYS[3]
local NO_TTL, LONG = 4294967295, 4294967294
local BUCKET_MS, CHUNK, SMALL = 10000, 2048, 128
-- the latest field expiry Redis keeps (2^46 - 1 ms: HFE_MAX_ABS_TIME_MSEC), in both modes; a
-- later one would fail a write halfway: HPEXPIREAT after HSET wrote the value, or HSETEX after
-- an expand (MAX_EXPIRY_MS in TypeScript)
local MAX_EXPIRY = 70368744177663
-- armed notifications outlive their due time by this much, for consumers that are down a while
local NOTIFY_GRACE_MS = 86400000

local now = now_ms(ARGV[1])
local meta, native, meta_before
-- while H is compact: { field, value, expiry } (meta is then unset)
local compact
local b_created = false -- B gained a bucket: its expiry must follow H's
-- native writes set a field and its expiry with one HSETEX (the writing script says whether this
-- server has it and lets the caller run it), else with HSET then HPEXPIREAT
local hsetex = false

-- next and max are written relative to base ('' for none): the meta field is in every hash,
-- and in hashes of one or two items its bytes are a large share of the whole.
local function relative(t)
  return t < 0 and '' or int(t - meta.base)
end

local function absolute(text, base)
  return text == '' and -1 or base + tonumber(text)
end

local function meta_string()
  return table.concat({ meta.mode, int(meta.base), relative(meta.next), relative(meta.max),
    int(meta.persistent), meta.indexed and '1' or '0' }, ',')
end

local META = '^(%a),(%d+),(-?%d*),(-?%d*),(%d+),(%d)$'

local function parse_meta(raw)
  local mode, base, nxt, max, persistent, indexed = string.match(raw, META)
  base = tonumber(base)
  return { mode = mode, base = base, next = absolute(nxt, base), max = absolute(max, base),
    persistent = tonumber(persistent), indexed = indexed == '1' }
end

-- Reads the meta field (or the one field of a compact H); returns false when H does not exist.
local function load_meta()
  local kind = rcall('TYPE', H).ok
  if kind == 'none' then return false end
  if kind == 'string' then
    local raw = rcall('GET', H)
    local len = struct.unpack('>I2', raw)
    compact = { field = string.sub(raw, 3, 2 + len), value = string.sub(raw, 3 + len), expiry = rcall('PEXPIRETIME', H) }
    return true
  end
  local raw = rcall('HGET', H, '')
  if not raw then
    -- a compact H as earlier versions wrote it: a hash of one field
    local only = rcall('HGETALL', H)
    if #only == 0 then return false end
    compact = { field = only[1], value = only[2], expiry = rcall('PEXPIRETIME', H) }
    return true
  end
  meta = parse_meta(raw)
  native = meta.mode == 'n'
  meta_before = raw
  return true
end

local function new_meta(mode)
  meta = { mode = mode, base = now, next = -1, max = -1, persistent = 0, indexed = false }
  native = mode == 'n'
  meta_before = false
end

-- The key-level expiry H should carry: none while a field has no ttl, else the latest expiry.
local function key_expiry(m)
  if m.persistent > 0 or m.max < 0 then return -1 end
  return m.max
end

-- Writes the meta field back if it changed, and H's (and B's) own expiry if that changed.
local function save_meta()
  if compact then return end
  local raw = meta_string()
  if raw == meta_before and not b_created then return end
  local before_expiry = -2
  if meta_before then before_expiry = key_expiry(parse_meta(meta_before)) end
  rcall('HSET', H, '', raw)
  meta_before = raw
  local expiry = key_expiry(meta)
  local keys = {}
  if expiry ~= before_expiry then keys[1] = H end
  if meta.indexed and (b_created or expiry ~= before_expiry) then keys[#keys + 1] = B end
  for _, key in ipairs(keys) do
    if expiry < 0 then rcall('PERSIST', key) else rcall('PEXPIREAT', key, expiry) end
  end
end

-- Removes H and B once no user field is left (N stays: it may hold notifications now due).
local function drop_if_empty()
  if compact or rcall('HLEN', H) > 1 then return false end
  rcall('DEL', H, B)
  meta_before = false
  return true
end

local function encode(expiry, value)
  if expiry < 0 then return struct.pack('>I4', NO_TTL) .. value end
  local offset = expiry - meta.base
  if offset >= 0 and offset < LONG then return struct.pack('>I4', offset) .. value end
  return struct.pack('>I4d', LONG, expiry) .. value
end

-- Index mode: the expiry (-1: none) and the user's value of a stored raw value.
local function decode(raw)
  local head = struct.unpack('>I4', raw)
  if head == NO_TTL then return -1, string.sub(raw, 5) end
  if head == LONG then return struct.unpack('>d', raw, 5), string.sub(raw, 13) end
  return meta.base + head, string.sub(raw, 5)
end

-- A field's expiry: -1 none; false when absent; a time <= now when expired (index mode may
-- still hold it; native mode may not have reclaimed it yet).
local function expiry_of(field)
  if native then
    local t = rcall('HPEXPIRETIME', H, 'FIELDS', 1, field)[1]
    if t == -2 then return false end
    return t
  end
  local raw = rcall('HGET', H, field)
  if not raw then return false end
  return (decode(raw))
end

-- A live field's expiry (-1: none) and value, or nil.
local function read(field)
  if compact then
    if field ~= compact.field or compact.expiry <= now then return nil end
    return compact.expiry, compact.value
  end
  local raw = rcall('HGET', H, field)
  if not raw then return nil end
  local expiry, value
  if native then
    -- the server hides a field only once its own clock passes the expiry; by `now` (the scripts'
    -- clock, explicit in tests) it may be expired already, and index mode would say so too
    expiry, value = rcall('HPEXPIRETIME', H, 'FIELDS', 1, field)[1], raw
  else
    expiry, value = decode(raw)
  end
  if expiry >= 0 and expiry <= now then return nil end
  return expiry, value
end

-- A field name with its length before it: the bucket index's names, and a compact H's field.
local function entry(field)
  return struct.pack('>I2', #field) .. field
end

local function write(field, value, expiry)
  if compact then
    -- the one field, its expiry unchanged (update.lua); a compact hash becomes a string
    rcall('SET', H, entry(field) .. value, 'KEEPTTL')
    return
  end
  if not native then
    rcall('HSET', H, field, encode(expiry, value))
    return
  end
  if expiry >= 0 and hsetex then
    rcall('HSETEX', H, 'PXAT', expiry, 'FIELDS', 1, field, value)
    return
  end
  rcall('HSET', H, field, value) -- clears the field's previous ttl
  if expiry >= 0 then rcall('HPEXPIREAT', H, expiry, 'FIELDS', 1, field) end
end

-- Lists `field` under the bucket of `expiry` (indexed hashes), unless `old` is in that bucket.
local function index_add(field, expiry, old)
  if not meta.indexed or expiry < 0 then return end
  local bucket = math.floor(expiry / BUCKET_MS)
  if old and old >= 0 and math.floor(old / BUCKET_MS) == bucket then return end
  local id = int(bucket)
  local chunks = tonumber(rcall('HGET', B, id)) or 0
  local chunk = chunks > 0 and rcall('HGET', B, id .. '.' .. chunks) or false
  local add = entry(field)
  if not chunk or (#chunk > 0 and #chunk + #add > CHUNK) then
    if chunks == 0 then b_created = true end
    chunks = chunks + 1
    rcall('HSET', B, id, chunks)
    chunk = ''
  end
  rcall('HSET', B, id .. '.' .. chunks, chunk .. add)
end

-- Called after a write grew H: past SMALL fields, list every expiring field by bucket.
local function index_if_large()
  if meta.indexed or rcall('HLEN', H) <= SMALL + 1 then return false end
  meta.indexed = true
  local all = rcall('HGETALL', H)
  for i = 1, #all, 2 do
    local field = all[i]
    if field ~= '' then
      local expiry = expiry_of(field)
      if expiry and expiry > now then index_add(field, expiry, nil) end
    end
  end
  return true
end

local function delete_fields(fields, key)
  for i = 1, #fields, 1000 do
    rcall('HDEL', key or H, unpack(fields, i, math.min(i + 999, #fields)))
  end
end

local function notice(expiry, field)
  return int(expiry) .. ':' .. field
end

-- Arms an expiry notification of `field` to `queue`, due at `expiry`.
local function arm(field, expiry, queue, value)
  rcall('HSET', N, notice(expiry, field), cjson.encode({ q = queue, v = value }))
  local keep = expiry + NOTIFY_GRACE_MS
  local pttl = rcall('PTTL', N)
  if pttl < 0 or now + pttl < keep then rcall('PEXPIREAT', N, keep) end
end

-- The notification a live field with expiry `expiry` has armed (decoded), or nil.
local function armed(field, expiry)
  if not expiry or expiry < 0 then return nil end
  local raw = rcall('HGET', N, notice(expiry, field))
  return raw and cjson.decode(raw) or nil
end

-- Small hashes: one pass over every field removes the expired ones and makes next, max and
-- persistent exact. Returns the number of live fields.
local function scan()
  local all = rcall('HGETALL', H)
  local fields, expiries = {}, {}
  for i = 1, #all, 2 do
    if all[i] ~= '' then
      fields[#fields + 1] = all[i]
      if not native then expiries[#expiries + 1] = (decode(all[i + 1])) end
    end
  end
  if native and #fields > 0 then expiries = rcall('HPEXPIRETIME', H, 'FIELDS', #fields, unpack(fields)) end
  local due, live, nxt, max, persistent = {}, 0, -1, -1, 0
  for i = 1, #fields do
    local e = expiries[i]
    if e == -1 then
      live, persistent = live + 1, persistent + 1
    elseif e > now then
      live = live + 1
      if nxt < 0 or e < nxt then nxt = e end
      if e > max then max = e end
    elseif e ~= -2 then
      due[#due + 1] = fields[i]
    end
  end
  delete_fields(due)
  meta.next, meta.max, meta.persistent = nxt, max, persistent
  return live
end

-- Indexed hashes: walks the buckets from `next` up to now, removing due fields, spending at most
-- `budget` (names checked, plus one per bucket visited). Returns true once caught up with now;
-- `next` is then exact when the current bucket still holds a pending field, else a lower bound.
local function walk(budget)
  local bucket = math.floor(meta.next / BUCKET_MS)
  local last = math.floor(now / BUCKET_MS)
  while bucket <= last do
    local id = int(bucket)
    local chunks = tonumber(rcall('HGET', B, id)) or 0
    local pending = -1
    budget = budget - 1
    for k = 1, chunks do
      local chunk = rcall('HGET', B, id .. '.' .. k)
      if chunk then
        if budget <= 0 then
          meta.next = bucket * BUCKET_MS
          return false
        end
        local keep, due, pos = {}, {}, 1
        while pos <= #chunk do
          local len = struct.unpack('>I2', chunk, pos)
          local field = string.sub(chunk, pos + 2, pos + 1 + len)
          local e = expiry_of(field)
          if e == false and native then
            due[#due + 1] = field
          elseif e and e >= 0 then
            if e <= now then
              due[#due + 1] = field
            elseif math.floor(e / BUCKET_MS) == bucket then
              keep[#keep + 1] = entry(field)
              if pending < 0 or e < pending then pending = e end
            end
          end
          pos = pos + 2 + len
        end
        budget = budget - #due - #keep
        delete_fields(due)
        if #keep == 0 then rcall('HDEL', B, id .. '.' .. k) else rcall('HSET', B, id .. '.' .. k, table.concat(keep)) end
      end
    end
    if pending >= 0 then
      meta.next = pending
      return true
    end
    if chunks > 0 then rcall('HDEL', B, id) end
    bucket = bucket + 1
  end
  meta.next = bucket * BUCKET_MS
  return true
end

-- Brings H up to date with now (due fields removed) and returns the live field count. Free when
-- nothing can have expired yet; a scan for small hashes; a bucket walk for indexed ones.
local function live_count()
  local live
  if meta.next >= 0 and now >= meta.next then
    if meta.indexed then walk(math.huge) else live = scan() end
  end
  live = live or rcall('HLEN', H) - 1
  if live == meta.persistent then meta.next, meta.max = -1, -1 end
  return live
end

-- Whether the sweeper has work here: a field due before the key's own expiry takes everything
-- (while no field lacks a ttl, the key expires with the latest one). The server expires a native
-- hash's fields itself; only an indexed one has buckets to trim.
local function needs_sweep()
  if meta.next < 0 or (native and not meta.indexed) then return false end
  return meta.persistent > 0 or meta.next < meta.max
end

-- Accounts for `field` going from expiry `old` (nil: absent, -1: none) to `expiry` (-1: none).
-- Returns the time the sweep registry must learn for this hash, or -1.
local function account(field, expiry, old)
  local needed, lowered = needs_sweep(), false
  if old == -1 then meta.persistent = meta.persistent - 1 end
  if expiry < 0 then
    meta.persistent = meta.persistent + 1
  else
    lowered = meta.next < 0 or expiry < meta.next
    if lowered then meta.next = expiry end
    if expiry > meta.max then meta.max = expiry end
    index_add(field, expiry, old)
  end
  if needs_sweep() and (lowered or not needed) then return meta.next end
  return -1
end

-- A compact H of one field with a ttl, new or replacing the one field (whatever H was).
local function write_compact(field, value, expiry)
  rcall('SET', H, entry(field) .. value, 'PXAT', expiry)
end

-- Turns a compact H into the full layout, in `mode` ('i' or 'n'), before a second field comes.
local function expand(mode)
  local one = compact
  compact = nil
  rcall('DEL', H)
  new_meta(mode)
  if one.expiry > now then
    write(one.field, one.value, one.expiry)
    account(one.field, one.expiry, nil)
  end
  -- written now: the caller counts fields with HLEN
  meta_before = meta_string()
  rcall('HSET', H, '', meta_before)
  local expiry = key_expiry(meta)
  if expiry >= 0 then rcall('PEXPIREAT', H, expiry) end
end

-- ms until the earliest and the latest expiry of a live field (0 when none has a ttl).
local function horizon()
  local oldest = meta.next >= 0 and math.max(0, meta.next - now) or 0
  local newest = meta.max >= 0 and math.max(0, meta.max - now) or 0
  return oldest, newest
end

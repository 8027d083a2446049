-- Include: what every rate-limit counter shares about its life and its block.
-- A counter's life runs from its first grant until it holds nothing any more (its window ends,
-- its bucket is full again, it is reset): grant ids name the life they were made in, so a grant
-- of an earlier life never takes back permits of a later one.
-- life_id() -> a new life's id: the server's TIME in µs at the script call (16 digits until 2286),
--   then the number of lives the call has started. No two calls on one server share a µs, so two
--   lives of one key never share an id (with the test hook's explicit times too: this is the real
--   clock), and a batch asks TIME once however many lives it starts.
-- life_at() -> the same id as two numbers, the µs and the number, for a counter that stores its
--   life as numbers (token-bucket.lua): a string made per life cost more than its Redis write.
--   Its text is the two written one after the other (life_text).
-- life_text(at, number) -> the text of a life life_at made
-- keep_until(key, ms, existed) -> the key lives at least `ms` more; `existed` is its PTTL before
--   the write that may have created it (-2: it did not exist; -1: no expiry, which is kept)
-- with_block(untilMs, now, allowed, remaining, retry, reset) -> the verdict with a block until
--   untilMs (nil: none): refused, nothing left, waits the longer of the block and its own wait;
--   sets `blocked_refusal` while a block is in force (decide.lua says so in its reply: such a
--   refusal is the lockout's, and must never start or lengthen one)
-- hash_block(key, now, untilMs) -> a hash counter (fixed windows, token bucket) refuses until
--   untilMs: field `b`, announced by a '!' at the end of the life field `e` (created as '!' when
--   the key has no life), so a check reads `b` only after one. A longer block stays.
-- block_of(key, e) -> the block (ms) a hash counter's life field `e` announces, else nil
-- life_parts(e) -> a hash counter's life field in parts: its life id ('' when it has none), what
--   refunds gave back in that life (0: nothing) and the block's mark ('!' or '')
-- with_given(life, given, mark) -> the life field for `life` once `given` was given back
-- expire_in_slices(key, needed, now, windowMs, last) -> the key lives at least until `needed` (ms,
--   the script's clock): its expiry is set to the end of the slice of windowMs / 64 that `needed`
--   falls in, so a write whose need falls in a slice already set leaves it (a key written in a
--   burst or a steady stream takes one PEXPIRE per slice, not per write), and a key outlives what
--   it needed by less than windowMs / 64. `last` is what the key's last write needed, which that
--   write set this way (nil: not known, or the clock stepped back since: the expiry is set).
local lives, call_id, call_us = 0, nil, nil

local function life_id()
  if not call_id then
    local t = server_time()
    call_id = t[1] .. string.format('%06d', tonumber(t[2]))
  end
  lives = lives + 1
  return call_id .. lives
end

local function life_at()
  if not call_us then
    local t = server_time()
    call_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  lives = lives + 1
  return call_us, lives
end

local function life_text(at, number)
  return int(at) .. int(number)
end

local blocked_refusal = false

local function with_block(untilMs, now, allowed, remaining, retry, reset)
  if not untilMs or untilMs <= now then return allowed, remaining, retry, reset end
  blocked_refusal = true
  return false, 0, math.max(retry, untilMs - now), math.max(reset, untilMs - now)
end

local function keep_until(key, ms, existed)
  if existed == -1 or ms <= 0 then return end
  if existed == -2 or existed < ms then redis.call('PEXPIRE', key, int(ms)) end
end

local function hash_block(key, now, untilMs)
  local existed = redis.call('PTTL', key)
  local state = redis.call('HMGET', key, 'b', 'e')
  local old, e = tonumber(state[1]), state[2]
  if old and old >= untilMs then return end
  if e and string.byte(e, -1) == 33 then
    redis.call('HSET', key, 'b', int(untilMs))
  else
    redis.call('HSET', key, 'b', int(untilMs), 'e', (e or '') .. '!')
  end
  keep_until(key, untilMs - now, existed)
end

local function block_of(key, e)
  if e and string.byte(e, -1) == 33 then return tonumber(redis.call('HGET', key, 'b')) end
end

local function life_parts(e)
  local life, given, mark = string.match(e or '', '^(%d*)%+?(%d*)(!?)$')
  return life, tonumber(given) or 0, mark
end

local function with_given(life, given, mark)
  return life .. '+' .. int(given) .. mark
end

local function expire_in_slices(key, needed, now, windowMs, last)
  local slice = math.max(1, math.floor(windowMs / 64))
  if last and needed <= math.ceil(last / slice) * slice then return end
  redis.call('PEXPIRE', key, int(math.ceil(needed / slice) * slice - now))
end

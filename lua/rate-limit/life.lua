-- Include: what every rate-limit counter shares about its life and its block.
-- A counter's life runs from its first grant until it holds nothing any more (its window ends,
-- its bucket is full again, it is reset): grant ids name the life they were made in, so a grant
-- of an earlier life never takes back permits of a later one.
-- life_id() -> a new life's id: the server's TIME in µs at the script call (16 digits until 2286),
--   then the number of lives the call has started. No two calls on one server share a µs, so two
--   lives of one key never share an id (with the test hook's explicit times too: this is the real
--   clock), and a batch asks TIME once however many lives it starts.
-- keep_until(key, ms, existed) -> the key lives at least `ms` more; `existed` is its PTTL before
--   the write that may have created it (-2: it did not exist; -1: no expiry, which is kept)
-- with_block(untilMs, now, allowed, remaining, retry, reset) -> the verdict with a block until
--   untilMs (nil: none): refused, nothing left, waits the longer of the block and its own wait;
--   sets `blocked_refusal` while a block is in force (decide.lua says so in its reply: such a
--   refusal is the lockout's, and must never start or lengthen one)
-- hash_block(key, now, untilMs) -> a hash counter (fixed windows, token bucket) refuses until
--   untilMs: field `b` (the token bucket's check reads it with its own fields; a fixed window's
--   once its life field says a block may be in force). A longer block stays.
local lives, call_id = 0, nil

local function life_id()
  if not call_id then
    local t = server_time()
    call_id = t[1] .. string.format('%06d', tonumber(t[2]))
  end
  lives = lives + 1
  return call_id .. lives
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
  local old = tonumber(redis.call('HGET', key, 'b'))
  if old and old >= untilMs then return end
  redis.call('HSET', key, 'b', int(untilMs))
  keep_until(key, untilMs - now, existed)
end

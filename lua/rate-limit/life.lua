-- Include: what every rate-limit counter shares about its life and its block.
-- A counter's life runs from its first grant until it holds nothing any more (its window ends,
-- its bucket is full again, it is reset): grant ids name the life they were made in, so a grant
-- of an earlier life never takes back permits of a later one.
-- life_at() -> a new life's id, as two numbers: the server's TIME in µs at the script call (16
--   digits until 2286), and the number of lives the call has started. No two calls on one server
--   share a µs, so two lives of one key never share an id (with the test hook's explicit times
--   too: this is the real clock), and a batch asks TIME once however many lives it starts. Every
--   counter stores its life as these numbers: a string made per life cost more than the life's
--   Redis write.
-- life_text(at, number) -> a life's id as grant ids write it: the two numbers one after the other
-- keep_until(key, ms, existed) -> the key lives at least `ms` more; `existed` is its PTTL before
--   the write that may have created it (-2: it did not exist; -1: no expiry, which is kept)
-- with_block(untilMs, now, allowed, remaining, retry, reset) -> the verdict with a block until
--   untilMs (nil: none): refused, nothing left, waits the longer of the block and its own wait;
--   sets `blocked_refusal` while a block is in force (decide.lua says so in its reply: such a
--   refusal is the lockout's, and must never start or lengthen one)
-- expire_in_slices(key, needed, now, windowMs, last) -> the key lives at least until `needed` (ms,
--   the script's clock): its expiry is set to the end of the slice of windowMs / 64 that `needed`
--   falls in, so a write whose need falls in a slice already set leaves it (a key written in a
--   burst or a steady stream takes one PEXPIRE per slice, not per write), and a key outlives what
--   it needed by less than windowMs / 64. `last` is what the key's last write needed, which that
--   write set this way (nil: not known, or the clock stepped back since: the expiry is set).
local lives, call_us = 0, nil

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

local function expire_in_slices(key, needed, now, windowMs, last)
  local slice = math.max(1, math.floor(windowMs / 64))
  if last and needed <= math.ceil(last / slice) * slice then return end
  redis.call('PEXPIRE', key, int(math.ceil(needed / slice) * slice - now))
end

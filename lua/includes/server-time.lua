-- Include: the clock every script uses.
-- server_time() -> the Redis server's TIME ({ seconds, µs }), asked once per script call: a call
--   that decides a batch would otherwise pay a command per decision that needs it.
-- now_ms(given) -> the given time in ms when it is a number, else the Redis server's TIME in ms.
-- Scripts take time from the server so app instances with skewed clocks agree; `given` exists
-- only so tests can be deterministic.
-- int(n) -> n as a decimal string; int_of(n) the same, remembered for the rest of the call (for
--   values a batch repeats: its time, windows, permits).
local server_time_reply

local function server_time()
  server_time_reply = server_time_reply or redis.call('TIME')
  return server_time_reply
end

local function now_ms(given)
  local explicit = tonumber(given)
  if explicit then return explicit end
  local t = server_time()
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Integers as decimal strings: Lua would otherwise be free to print large ones as 1e+15.
local function int(n)
  return string.format('%d', n)
end

local int_strings = {}

local function int_of(n)
  local s = int_strings[n]
  if not s then
    s = int(n)
    int_strings[n] = s
  end
  return s
end

-- Include: the clock every script uses.
-- now_ms(given) -> the given time in ms when it is a number, else the Redis server's TIME in ms.
-- Scripts take time from the server so app instances with skewed clocks agree; `given` exists
-- only so tests can be deterministic.
local function now_ms(given)
  local explicit = tonumber(given)
  if explicit then return explicit end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Integers as decimal strings: Lua would otherwise be free to print large ones as 1e+15.
local function int(n)
  return string.format('%d', n)
end

-- The recurring schedules of a queue (DelayQueueService.schedules), by name (bytewise), or one of
-- them, with the server's time: schedule() computes a replacement's first tick from both.
-- KEYS[1]  schedules  hash (recurring-set.lua)
-- ARGV[1]  name: string = ''  one schedule's name, or '' for all
-- Returns  a flat array:
--            - now: ms  the Redis server clock
--            - schedules[]  four per schedule:
--                - name: string
--                - spec: json
--                - nextRunAt: ms | nil  its pending tick; nil when it has no more
--                - runs: int  its runs since it was last created or replaced
--- @include "../includes/server-time.lua"

local rcall = redis.call
local names = {}
if ARGV[1] ~= '' then
  if rcall('HGET', KEYS[1], 's:' .. ARGV[1]) then names[1] = ARGV[1] end
else
  local all = rcall('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local name = string.match(all[i], '^s:(.*)$')
    if name then names[#names + 1] = name end
  end
  table.sort(names)
end
local reply = { now_ms('') }
for _, name in ipairs(names) do
  local fields = rcall('HMGET', KEYS[1], 's:' .. name, 'n:' .. name, 'r:' .. name)
  reply[#reply + 1] = name
  reply[#reply + 1] = fields[1]
  reply[#reply + 1] = fields[2] and tonumber(fields[2]) or false
  reply[#reply + 1] = tonumber(fields[3]) or 0
end
return reply

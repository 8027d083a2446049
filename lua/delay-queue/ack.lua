-- Acknowledge handled messages: they leave the queue for good.
-- KEYS[1]  scheduled (unused)
-- KEYS[2]  in flight
-- KEYS[3]  dead (unused)
-- KEYS[4]  data
-- ARGV[1..] ids
-- Returns  how many were still in flight (an expired lease may have been handed on meanwhile)
local rcall = redis.call
local acked = 0
for i = 1, #ARGV do
  local id = ARGV[i]
  if rcall('ZREM', KEYS[2], id) == 1 then
    rcall('HDEL', KEYS[4], 'p:' .. id, 'a:' .. id, 'e:' .. id)
    acked = acked + 1
  end
end
return acked

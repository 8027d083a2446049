-- Include: a slot of the queue's global concurrency came free (a lease ended).
-- free_slot(data): when a claim found the queue full, it left 'w' = '<publish command> <channel>'
-- in the data hash: the consumers waiting are woken (told '0': due now), once; else nothing.
local function free_slot(data)
  local waiting = redis.call('HGET', data, 'w')
  if not waiting then return end
  redis.call('HDEL', data, 'w')
  local command, channel = string.match(waiting, '^(%S+) (.*)$')
  redis.call(command, channel, '0')
end

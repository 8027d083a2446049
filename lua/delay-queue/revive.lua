-- Include: a dead message scheduled again (retried, or its id enqueued anew).
-- revive(data, id): its attempts start over, yet its lease token keeps growing. Its claims so far
-- stay in 'a:'..id and all count as no attempt ('d:'..id = 'a:'..id; see message-fields.lua),
-- so the next claim is attempt 1 with a token no earlier claim had, and a late ack, failure,
-- renewal or admission from a claim made before it died stays refused (lease.lua). Its last
-- error, any pending mark, its last claim's runAt and why it last waited go.
local function revive(data, id)
  local claims = redis.call('HGET', data, 'a:' .. id)
  if claims then
    redis.call('HSET', data, 'd:' .. id, claims)
  else
    redis.call('HDEL', data, 'd:' .. id)
  end
  redis.call('HDEL', data, 'e:' .. id, 'u:' .. id, 'r:' .. id, 'y:' .. id)
end

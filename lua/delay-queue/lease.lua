-- Include: whether a claim still holds a message's lease.
-- holds_lease(in_flight, data, id, token) -> true while `id` is in flight and `token` (text) is its
-- latest claim's: every claim counts one more in 'a:'..id and never counts back, so once a claim
-- hands an expired lease on, the earlier claim's admission, ack, failure or renewal is refused.
local function holds_lease(in_flight, data, id, token)
  return redis.call('ZSCORE', in_flight, id) ~= false and redis.call('HGET', data, 'a:' .. id) == token
end

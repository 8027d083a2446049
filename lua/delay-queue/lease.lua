-- Include: whether an attempt still holds a message's lease.
-- holds_lease(in_flight, data, id, attempt) -> true while `id` is in flight and `attempt` (text)
-- is its latest delivery: a claim that hands an expired lease on counts another attempt, so the
-- earlier one's ack, failure or renewal is refused from then on.
local function holds_lease(in_flight, data, id, attempt)
  return redis.call('ZSCORE', in_flight, id) ~= false and redis.call('HGET', data, 'a:' .. id) == attempt
end

-- Include: a message's fields in the queue's data hash.
--   'p:'..id  payload (JSON)
--   'a:'..id  claims so far: the lease token (see lease.lua)
--   'e:'..id  the last failure's error
--   'd:'..id  claims that were no attempt: deferred by a rate limit, or whose admission never
--             came, or made before the message died and was brought back (revive.lua); only
--             messages of rate-limited consumers and revived ones have it
--   'u:'..id  set while a rate-limited claim awaits its admission (admit.lua)
--   'r:'..id  the runAt of its last claim (claim.lua): the delivery's due time, once it is in
--             flight
--   'y:'..id  why it was last given back to wait (admit.lua, retry-later.lua), for explain: the
--             reason, the time it was made due then, and the key: 'r <due> <counter key>' over
--             its rate limit, 'p <due> <pace or hold key>' its key paused, 'c <due> <slots key>'
--             waiting for a concurrency slot, 'l <due>' its handler's RetryLater. It tells only
--             while the message is still due at that time: any later move makes it stale
--   't:'..id  its source, when a part of the library made it: '<kind> <ref>', the ref being the
--             source's own. 'tick <schedule name>' for a recurring schedule's tick
--             (recurring-set.lua, recurring-advance.lua): its claim advances the schedule.
--             'expiry <ref>' for an ExpiringHash's expiry notification (enqueue.lua, told so by
--             the notifier): its consumer disarms it before the outcome is recorded
--   'c:'..id  the trace context it was enqueued in (W3C traceparent, then tracestate after a
--             newline), when the enqueuer traced it: its handler's span continues that trace
-- A message's attempts (what handlers see, what maxAttempts bounds) are its claims less its
-- non-attempts. Two fields belong to the queue, not a message: 'w' (claim.lua, free-slot.lua)
-- and 'f', its claims so far (claim.lua), which is never deleted.
-- message_fields(id) -> all nine names, for HDEL / HMGET, in the order above.
local function message_fields(id)
  return 'p:' .. id, 'a:' .. id, 'e:' .. id, 'd:' .. id, 'u:' .. id, 'r:' .. id, 'y:' .. id, 't:' .. id, 'c:' .. id
end

-- attempts_of(fields) -> deliveries so far, from HMGET of message_fields: its claims less those
-- that were no attempt, less one awaiting its admission (its handler has not run)
local function attempts_of(fields)
  return (tonumber(fields[2]) or 0) - (tonumber(fields[4]) or 0) - (fields[5] and 1 or 0)
end

-- Include: a message's fields in the queue's data hash.
--   'p:'..id  payload (JSON)
--   'a:'..id  claims so far: the lease token (see lease.lua)
--   'e:'..id  the last failure's error
--   'd:'..id  claims that were no attempt: deferred by a rate limit, or whose admission never
--             came, or made before the message died and was brought back (revive.lua); only
--             messages of rate-limited consumers and revived ones have it
--   'u:'..id  set while a rate-limited claim awaits its admission (admit.lua)
-- A message's attempts (what handlers see, what maxAttempts bounds) are its claims less its
-- non-attempts. Two fields belong to the queue, not a message: 'w' (claim.lua, free-slot.lua)
-- and 'f', its claims so far (claim.lua), which is never deleted.
-- message_fields(id) -> all five names, for HDEL / HMGET.
local function message_fields(id)
  return 'p:' .. id, 'a:' .. id, 'e:' .. id, 'd:' .. id, 'u:' .. id
end

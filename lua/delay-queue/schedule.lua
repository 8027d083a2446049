-- Include: schedule one message, unless its id is already scheduled or in flight.
-- schedule(keys, id, payload, run_at, source, context) -> SCHEDULED and run_at when scheduled now;
--  ALREADY_QUEUED and the score it already has (runAt, or lease deadline) when its id is scheduled
--  or in flight. `source` (message-fields.lua's 't:'), when given and not '', marks a message the
--  library made; `context` ('c:'), when given and not '', is the trace it was enqueued in; the
--  message of an id already queued keeps what it had.
--  `keys` are the queue's KEYS (scheduled, in flight, dead, data); the codes are replies.lua's,
--  which the including script includes first, with revive.lua. A dead id enqueued again starts
--  afresh (revive.lua); any other id not scheduled or in flight has no fields (every script that
--  lets a message go deletes them all).
local function schedule(keys, id, payload, run_at, source, context)
  local existing = redis.call('ZSCORE', keys[1], id) or redis.call('ZSCORE', keys[2], id)
  if existing then return ALREADY_QUEUED, tonumber(existing) end
  if redis.call('ZREM', keys[3], id) == 1 then
    revive(keys[4], id)
    -- enqueued anew, it is its new sender's: a user's loses the library's mark, an untraced one
    -- the old trace
    if not source or source == '' then redis.call('HDEL', keys[4], 't:' .. id) end
    if not context or context == '' then redis.call('HDEL', keys[4], 'c:' .. id) end
  end
  local fields = { 'p:' .. id, payload }
  if source and source ~= '' then
    fields[#fields + 1] = 't:' .. id
    fields[#fields + 1] = source
  end
  if context and context ~= '' then
    fields[#fields + 1] = 'c:' .. id
    fields[#fields + 1] = context
  end
  redis.call('HSET', keys[4], unpack(fields))
  redis.call('ZADD', keys[1], run_at, id)
  return SCHEDULED, run_at
end

-- the queue's earliest runAt, or nil when nothing is scheduled
local function scheduled_head(scheduled)
  local head = redis.call('ZRANGE', scheduled, 0, 0, 'WITHSCORES')
  return head[2] and tonumber(head[2]) or nil
end

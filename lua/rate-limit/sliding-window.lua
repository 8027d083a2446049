-- Include: exact sliding-window limiter. A grant of p permits at t counts against every request
-- before t + windowMs, so no span of windowMs ever holds more than `limit` permits.
-- State: one sorted set per counter, whose cost grows with grants, never with permits:
--   grants   member '<seq>:<permits>', scored by grant time (ms >= 0); seq numbers the key's
--            grants, so a member (the grant id) is never reused while the key lives
--   counter  member '#<seq of the newest grant>', scored -1 - (permits the live grants hold):
--            always the lowest score, so ZRANGE 0 0 reads it and `used` costs O(log n)
-- Grants that age out are removed by the next decision, which takes their permits off the
-- counter (each grant is removed once). The key expires windowMs after the last grant.
-- sliding_window.check(key, limit, windowMs, permits, now) -> allowed, remaining, retry, reset, used
--   (reset is nil when it takes a lookup that only an uncommitted decision needs: see .reset)
-- sliding_window.commit(key, limit, windowMs, permits, now, used) -> remaining, reset, grant id
-- sliding_window.reset(key, windowMs, now) -> ms until the newest grant ages out
-- sliding_window.refund(key, limit, windowMs, permits, now, grant) -> permits given back (0 when the
--   grant is unknown, already refunded or aged out); a grant refunded in part keeps the rest
local sliding_window = {}

-- members read per call when walking grants: bounds the reply a walk holds at once
local SW_CHUNK = 256

local function sw_permits(member)
  return tonumber(string.match(member, ':(%d+)$'))
end

-- the counter member and the permits the live grants hold, after removing the aged-out ones
local function sw_used(key, windowMs, now)
  local head = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if not head[1] then return nil, 0 end
  local used, cutoff = -1 - tonumber(head[2]), now - windowMs
  if cutoff >= 0 then
    local freed = 0
    repeat
      local old = redis.call('ZRANGEBYSCORE', key, 0, cutoff, 'LIMIT', 0, SW_CHUNK)
      for i = 1, #old do freed = freed + sw_permits(old[i]) end
      if #old > 0 then redis.call('ZREM', key, unpack(old)) end
    until #old < SW_CHUNK
    if freed > 0 then
      used = used - freed
      redis.call('ZADD', key, int(-1 - used), head[1])
    end
  end
  return head[1], used
end

function sliding_window.check(key, limit, windowMs, permits, now)
  local _, used = sw_used(key, windowMs, now)
  local allowed = used + permits <= limit
  local retry = 0
  if not allowed then
    -- the request fits once (used + permits - limit) permits of the oldest grants have aged
    -- out: walk them, oldest first (rank 0 is the counter)
    local need, start = used + permits - limit, 1
    while retry == 0 do
      local grants = redis.call('ZRANGE', key, start, start + SW_CHUNK - 1, 'WITHSCORES')
      -- (never without permits <= limit and a counter that matches its grants; a key someone
      -- else rewrote must not loop forever)
      if #grants == 0 then retry = windowMs end
      for i = 1, #grants, 2 do
        need = need - sw_permits(grants[i])
        if need <= 0 then
          retry = tonumber(grants[i + 1]) + windowMs - now
          break
        end
      end
      start = start + SW_CHUNK
    end
  end
  local reset = 0
  if used > 0 then reset = nil end
  return allowed, limit - used, retry, reset, used
end

function sliding_window.reset(key, windowMs, now)
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if not newest[1] or string.sub(newest[1], 1, 1) == '#' then return 0 end
  return tonumber(newest[2]) + windowMs - now
end

function sliding_window.commit(key, limit, windowMs, permits, now, used)
  local head = redis.call('ZRANGE', key, 0, 0)
  local seq = 1
  if head[1] then
    seq = tonumber(string.sub(head[1], 2)) + 1
    redis.call('ZREM', key, head[1])
  end
  local grant = int(seq) .. ':' .. int(permits)
  redis.call('ZADD', key, int(-1 - (used + permits)), '#' .. int(seq), int(now), grant)
  redis.call('PEXPIRE', key, int(windowMs))
  return limit - used - permits, windowMs, grant
end

function sliding_window.refund(key, limit, windowMs, permits, now, grant)
  local at = tonumber(redis.call('ZSCORE', key, grant))
  if not at then return 0 end
  local head, used = sw_used(key, windowMs, now)
  -- aged out: removed by sw_used just now, its permits already given back by time
  if at + windowMs <= now then return 0 end
  local held = sw_permits(grant)
  local back = math.min(held, permits)
  redis.call('ZREM', key, grant)
  if back < held then redis.call('ZADD', key, int(at), string.match(grant, '^%d+') .. ':' .. int(held - back)) end
  redis.call('ZADD', key, int(-1 - (used - back)), head)
  return back
end

-- One message as it stands, for get() and explain(): the set that holds it, its score there and
-- its fields, read in one call so they agree.
-- KEYS[1]  scheduled  zset: id -> runAt ms
-- KEYS[2]  inFlight  zset: id -> lease deadline ms
-- KEYS[3]  dead  zset: id -> ms it died
-- KEYS[4]  data
-- ARGV[1]  now: ms = ''  now in ms, or '' to use the Redis server clock
-- ARGV[2]  id: string
-- Returns  a flat array:
--            - now: ms
--            - state: 's' | 'f' | 'd' | '-'  the set that holds it: scheduled, in flight or
--              dead; '-' for none (unknown here)
--            - score: ms  its score in that set: runAt, lease deadline, the time it died; 0 for
--              none
--            - payload: json
--            - attempts: int  deliveries so far (a claim awaiting its admission is none yet)
--            - claims: int  its claims so far: the lease token of the latest
--            - pending: int  1 while that claim awaits its admission (admit.lua), else 0
--            - error: string  the last failure's, or ''
--            - runAt: ms | nil  the due time of its last claim (message-fields.lua)
--            - why: string  why it was last given back to wait (message-fields.lua), or ''
--- @include "../includes/server-time.lua"
--- @include "message-fields.lua"

local rcall = redis.call
local id = ARGV[2]
local now = now_ms(ARGV[1])
local state, score = '-', nil
for _, set in ipairs({ { 's', KEYS[1] }, { 'f', KEYS[2] }, { 'd', KEYS[3] } }) do
  score = rcall('ZSCORE', set[2], id)
  if score then
    state = set[1]
    break
  end
end
if not score then return { now, '-', 0, 'null', 0, 0, 0, '', false, '' } end
local fields = rcall('HMGET', KEYS[4], message_fields(id))
return {
  now,
  state,
  score,
  fields[1] or 'null',
  attempts_of(fields),
  tonumber(fields[2]) or 0,
  fields[5] and 1 or 0,
  fields[3] or '',
  fields[6] and tonumber(fields[6]) or false,
  fields[7] or '',
}

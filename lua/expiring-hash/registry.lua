-- Include: one shard of the sweep registry, a sorted set of user key -> when its hash next has
-- work (ms). Scores below LEASED are due times; a due time with a half (x.5) is held: a write
-- that registered it may still be on its way, so a sweep that finds no work there looks once more
-- before forgetting the hash. A leased member's score is LEASED + its lease deadline.
--- @include "replies.lua"

local rcall = redis.call
local LEASED = 1125899906842624 -- 2^50 ms: no due time comes near it

-- The earliest time anything in `registry` is due (a lease: its deadline), or NOTHING_DUE.
local function earliest(registry)
  local first = rcall('ZRANGE', registry, 0, 0, 'WITHSCORES')
  if not first[2] then return NOTHING_DUE end
  local score = tonumber(first[2])
  if score >= LEASED then score = score - LEASED end
  return math.floor(score)
end

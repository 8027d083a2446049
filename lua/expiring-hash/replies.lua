-- Include: the ExpiringHash scripts' reply codes, named once; HashReply in lib/redis/replies.ts
-- (checked by test/unit/replies.spec.ts). Codes sharing a place with times (ms) are negative.
-- set.lua: written, or refused at the cap
local ACCEPTED, FULL = 1, 0
-- expire.lua, update.lua: the field was live and changed, or was not live
local CHANGED, NOT_LIVE = 1, 0
-- set.lua, expire.lua: now + ttl passes MAX_EXPIRY; nothing written
local OUT_OF_RANGE = -1
-- set.lua, update.lua: the server lacks (or refuses the caller) a command of the write path the
-- call named (write-path.lua); nothing written
local PATH_REFUSED = -2
-- set.lua's count: no cap asked
local NO_CAP = -1
-- ms left (get.lua, entries.lua; set.lua's ttl): no ttl; absent or expired (get.lua)
local NO_TTL, ABSENT = -1, -2
-- a time: nothing for the registry to learn, no work left in a hash or a shard
local NOTHING_DUE = -1
-- sweep.lua: the budget ran out with work left, or the sweep caught up
local BUDGET_SPENT, CAUGHT_UP = 1, 0
-- registry-claim.lua, registry-release.lua: the registration was held, or not
local HELD, NOT_HELD = 1, 0
-- registry-add.lua: a wake-up was published, or not
local WOKE, NOT_WOKE = 1, 0
-- hsetex-probe.lua: native writes may use HSETEX, or not
local HSETEX_ALLOWED, HSETEX_REFUSED = 1, 0

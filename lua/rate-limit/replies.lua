-- Include: the reply codes of the rate-limit scripts, named once. lib/redis/replies.ts gives the
-- TypeScript side the same names (RateLimitReply), and test/unit/replies.spec.ts checks that
-- every name has the same value in both.
-- decide.lua, penalize.lua: a stack's or a limit's verdict
local GRANTED = 1
local REFUSED = 0
-- decide.lua, a limit's verdict: refused because a block (lockout) is in force
local BLOCKED = 2
-- decide.lua, a limit's verdict: granted and charged (its row names the grant; GRANTED: nothing
-- charged)
local CHARGED = 3
-- decide.lua, in place of a stack's verdict: its Redis call failed (the error text follows)
local STACK_FAILED = -1

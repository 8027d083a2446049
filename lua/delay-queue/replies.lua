-- Include: the reply codes of the delay-queue scripts, named once. lib/redis/replies.ts gives
-- the TypeScript side the same names (QueueReply), and test/unit/replies.spec.ts checks that
-- every name has the same value in both. A code sharing its place in a reply with times (ms) is
-- negative, as a time never is.
-- fail.lua: the message moved to the dead set (else it replies the time it is due again)
local DIED = -1
-- fail.lua, admit.lua: that claim no longer holds the message (its lease ran out and was handed
-- on, or its outcome is recorded): nothing changed
local LEASE_LOST = -2
-- admit.lua: the message is charged to its key's counter; its handler may start (else it
-- replies the time the message is due again)
local ADMITTED = -3
-- admit.lua: every slot of the message's concurrency key is taken: it waits for one
local WAITING = -4
-- claim.lua, as its next time: nothing is scheduled or in flight
local NOTHING_DUE = -1
-- reschedule.lua: the id is not scheduled (else it replies the new runAt)
local NOT_SCHEDULED = -1
-- enqueue.lua, enqueue-many.lua: scheduled now, or not (its id was already scheduled or in flight)
local SCHEDULED = 1
local ALREADY_QUEUED = 0
-- cancel.lua: the message was scheduled and is gone, or nothing changed
local CANCELLED = 1
local NOT_CANCELLED = 0
-- recurring-set.lua: the schedule changed since the caller read it (another call replaced it)
local CHANGED = -5
-- recurring-advance.lua, per tick: it runs (its schedule advanced, or was advanced by an earlier
-- claim of it, or replaced or removed meanwhile); it was dropped (ticks were missed while
-- nothing ran: the latest runs instead); or the spec the caller computed with is not the
-- schedule's (the current one follows)
local RUN = 1
local DROPPED = 2
local STALE = 3
-- page.lua: more messages follow the page, or it is the last
local MORE = 1
local LAST_PAGE = 0

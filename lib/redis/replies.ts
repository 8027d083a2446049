// The scripts' reply codes, named once for the TypeScript side. Each object mirrors one Lua
// include (the scripts return these names there); test/unit/replies.spec.ts reads both and
// checks that every name has the same value. A code sharing its place in a reply with times (ms)
// is negative, as a time never is.

/** lua/delay-queue/replies.lua */
export const QueueReply = {
  /** fail.lua: the message moved to the dead set (else it replies the time it is due again). */
  DIED: -1,
  /** fail.lua, admit.lua: that claim no longer holds the message; nothing changed. */
  LEASE_LOST: -2,
  /** admit.lua: charged to its key's counter, the handler may start (else: the time it is due again). */
  ADMITTED: -3,
  /** admit.lua: every slot of its concurrency key is taken: it waits for one. */
  WAITING: -4,
  /** claim.lua, as its next time: nothing is scheduled or in flight. */
  NOTHING_DUE: -1,
  /** reschedule.lua: the id is not scheduled (else it replies the new runAt). */
  NOT_SCHEDULED: -1,
  /** enqueue.lua, enqueue-many.lua: scheduled now. */
  SCHEDULED: 1,
  /** enqueue.lua, enqueue-many.lua: its id was already scheduled or in flight. */
  ALREADY_QUEUED: 0,
  /** cancel.lua: it was scheduled and is gone. */
  CANCELLED: 1,
  /** cancel.lua: nothing changed. */
  NOT_CANCELLED: 0,
  /** recurring-set.lua: the schedule changed since the caller read it. */
  CHANGED: -5,
  /** recurring-advance.lua, per tick: it runs. */
  RUN: 1,
  /** recurring-advance.lua: dropped, as ticks were missed while nothing ran (the latest runs instead). */
  DROPPED: 2,
  /** recurring-advance.lua: the caller's spec is not the schedule's; the current one follows. */
  STALE: 3,
  /** page.lua: more messages follow the page. */
  MORE: 1,
  /** page.lua: the page is the last. */
  LAST_PAGE: 0,
} as const;

/** lua/rate-limit/replies.lua */
export const RateLimitReply = {
  /** decide.lua, penalize.lua: a stack's or a limit's verdict. */
  GRANTED: 1,
  REFUSED: 0,
  /** decide.lua, a limit's verdict: refused because a block (lockout) is in force. */
  BLOCKED: 2,
  /** decide.lua, a limit's verdict: granted and charged (its row names the grant; GRANTED: nothing charged). */
  CHARGED: 3,
  /** decide.lua, in place of a stack's verdict: its Redis call failed (the error text follows). */
  STACK_FAILED: -1,
} as const;

/** lua/expiring-hash/replies.lua */
export const HashReply = {
  /** set.lua: the field is written. */
  ACCEPTED: 1,
  /** set.lua: refused, the cap is reached. */
  FULL: 0,
  /** expire.lua, update.lua: the field was live and has its new ttl or value. */
  CHANGED: 1,
  /** expire.lua, update.lua: the field was not live; nothing changed. */
  NOT_LIVE: 0,
  /** set.lua, expire.lua: now + ttl passes MAX_EXPIRY_MS by the server's clock; nothing was written. */
  OUT_OF_RANGE: -1,
  /** set.lua, update.lua: the server lacks (or refuses this user) a command of the write path the
   * call named: native field expiry or HSETEX (the server changed since it was asked); nothing was
   * written. */
  PATH_REFUSED: -2,
  /** set.lua, as its count: no cap was asked. */
  NO_CAP: -1,
  /** get.lua, entries.lua, as ms left: the field has no ttl (set.lua takes it as its ttl too). */
  NO_TTL: -1,
  /** get.lua, as ms left: the field is absent or expired. */
  ABSENT: -2,
  /** As a time: nothing for the sweep registry to learn (set.lua, expire.lua), no work left in the
   * hash (sweep.lua, registry-release.lua's triples), nothing in the shard (registry-claim.lua,
   * registry-release.lua). */
  NOTHING_DUE: -1,
  /** sweep.lua: the budget ran out with work left. */
  BUDGET_SPENT: 1,
  /** sweep.lua: the sweep caught up. */
  CAUGHT_UP: 0,
  /** registry-claim.lua (and registry-release.lua's triples): the hash's registration was held. */
  HELD: 1,
  NOT_HELD: 0,
  /** registry-add.lua: the time became the shard's earliest and a wake-up was published, or not. */
  WOKE: 1,
  NOT_WOKE: 0,
  /** hsetex-probe.lua: native writes may use HSETEX here, or not. */
  HSETEX_ALLOWED: 1,
  HSETEX_REFUSED: 0,
} as const;

import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { ExpiringHashService } from '../expiring-hash/expiring-hash.service.js';
import { countedAs } from '../observability/counted-requests.js';
import { applyFailMode } from '../transports/responses.js';
import { RouteLog } from '../rate-limit/route-log.js';
import { resolveKey, UserFunctionError } from '../rate-limit/user-functions.js';
import { RedisConnection } from '../redis/redis-connection.js';
import { MaxPendingPlans, type MaxPendingPlan } from './max-pending.plans.js';
import { heldSlot, holdSlot, releaseSlot, type HeldSlot } from './pending-slot.js';
import { openRoute, sendDecisionHeaders } from '../transports/guard-opening.js';
import { defaultKey, userFailure } from '../transports/transport.adapter.js';
import { isWellFormed } from '../validation.js';
import { whenClosed } from '../transports/response-close.js';

/** A request that reserved its slot already (another guard instance met it first). */
const holdsSlot = (req: object): boolean => heldSlot(req) !== undefined;

/**
 * Reserves a handler's `@MaxPending` slot, or answers 429 when the owner already holds `max` live
 * ones. Attached by the decorator; on a controller and a handler both, the first to run decides.
 */
@Injectable()
export class MaxPendingGuard implements CanActivate {
  private readonly logger = new Logger('MaxPendingGuard');
  private readonly log = new RouteLog(this.logger);

  constructor(
    @Inject(ExpiringHashService) private readonly expiringHash: ExpiringHashService,
    @Inject(MaxPendingPlans) private readonly plans: MaxPendingPlans,
    @Inject(RedisConnection) private readonly redis: RedisConnection,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    // HTTP routes and GraphQL resolvers; the plans refuse it elsewhere at start-up
    const opened = openRoute(ctx, this.plans, holdsSlot);
    if (opened === undefined) return true;
    const { transport, req: request, res: response, plan } = opened;

    let owner: string;
    try {
      owner = await ownerOf(plan, ctx, this.redis);
    } catch (error) {
      throw userFailure(transport, this.log.failure(plan.route, error));
    }
    const key = `${plan.name}:${owner}`;
    const slot: HeldSlot = { route: plan.route, key, slotId: randomUUID(), reserved: false, reached: false };
    let reservation;
    try {
      const opts = plan.notify ? { notify: plan.notify } : undefined;
      reservation = await this.expiringHash.reserve(key, slot.slotId, '', plan.ttlMs, plan.max, opts);
    } catch (error) {
      applyFailMode(error, plan.failMode, this.redis, plan.route, () => transport.unavailable());
      holdSlot(request, slot); // an id for the handler, but nothing in Redis to release
      return true;
    }
    this.redis.reportSuccess();

    const { accepted, count, retryAfterMs, resetMs } = reservation;
    const decision = { allowed: accepted, limit: plan.max, remaining: Math.max(0, plan.max - count), retryAfterMs, resetMs };
    const policy = { name: plan.name, limit: plan.max, windowMs: plan.ttlMs };
    sendDecisionHeaders(transport, response, this.redis.options.headers, [policy], [decision], accepted ? undefined : retryAfterMs);
    if (!accepted) {
      this.redis.events.maxPendingRefused(plan.route, owner, plan.max, countedAs(request));
      throw transport.tooManyRequests(retryAfterMs);
    }

    slot.reserved = true;
    holdSlot(request, slot);
    // A guard that runs after this one may still refuse the request; the handler then never runs
    // and the slot would hold capacity for its whole ttl. Release it once the response is done.
    whenClosed(response, () => {
      if (!slot.reached) void releaseSlot(this.expiringHash, slot, this.logger);
    });
    return true;
  }
}

async function ownerOf(plan: MaxPendingPlan, ctx: ExecutionContext, redis: RedisConnection): Promise<string> {
  const owner = await resolveKey('owner', plan.owner ?? ((c) => defaultKey(c, redis.options)), ctx);
  // it would reach the sweep registry as U+FFFD, and its slots would never be swept
  if (!isWellFormed(owner)) throw new UserFunctionError('owner resolved to a string with a lone surrogate');
  return owner;
}

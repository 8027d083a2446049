export { RedisLimitModule } from './redis-limit.module.js';
export type { RedisLimitFactoryOptions, RedisLimitModuleAsyncOptions } from './redis-limit.module-definition.js';
export type { RedisLimitModuleExtras, RedisLimitModuleOptions } from './redis-limit.options.js';
export { RedisLimitTestClock } from './testing/test-clock.js';
export type { RedisLimitTestingOptions } from './redis-limit.testing.js';
export type { ClusterConfig } from './redis/connection.options.js';
export type { FailMode, HeadersMode, KeyResolver } from './transports/guard.options.js';
export type { SkipIf } from './rate-limit/rate-limit.options.js';
export type { ExpiringHashOptions } from './expiring-hash/expiring-hash.options.js';
export { RateLimiterService } from './rate-limit/rate-limiter.service.js';
export type { DecideOptions, StackDecision, StackedLimit } from './rate-limit/decision.types.js';
export type { FunnelPolicy, LimitKind, RateLimitAlgorithm, RateLimitDecision, RateLimitPolicy } from './rate-limit/policy.js';
export { ExpiringHashService } from './expiring-hash/expiring-hash.service.js';
export type { ExpiringEntry, ExpiringSetOptions, ExpiryMode, SetIfBelowResult, SlotReservation } from './expiring-hash/expiring-hash.types.js';
export type { ExpiredField } from './expiring-hash/notifier.js';
export { DelayQueueService } from './delay-queue/delay-queue.service.js';
export { OnDelayed } from './delay-queue/on-delayed.decorator.js';
export { DelayQueueTimeoutError, RetryLater, Unrecoverable, type RetryLaterOptions } from './delay-queue/handler-outcomes.js';
export type {
  ConsumeOptions,
  DelayedHandler,
  DeadMessage,
  DeadPage,
  ListedMessage,
  ListOptions,
  MessagePage,
  MessageState,
  QueuedMessage,
  ScheduleInfo,
  ScheduleSpec,
  DelayedMessage,
  DelayQueueConsumer,
  DelayQueueOptions,
  EnqueueManyItem,
  EnqueueOptions,
  QueueSize,
  RescheduleOptions,
} from './delay-queue/delay-queue.types.js';
export { RateLimit, SkipRateLimit } from './rate-limit/rate-limit.decorator.js';
export { RateLimitGuard } from './rate-limit/rate-limit.guard.js';
export { defaultTracker } from './transports/default-tracker.js';
export { RateLimitException } from './transports/rate-limit.exception.js';
export { GraphQLLimitError } from './transports/graphql.adapter.js';
export { Funnel } from './rate-limit/funnel.decorator.js';
export type { CostResolver, FunnelOptions, RateLimitOptions } from './rate-limit/rate-limit.metadata.js';
export type { TierResolver } from './rate-limit/tier.js';
export { MaxPending } from './max-pending/max-pending.decorator.js';
export { MaxConcurrent } from './max-concurrent/max-concurrent.decorator.js';
export type { MaxConcurrentOptions } from './max-concurrent/max-concurrent.metadata.js';
export type { SlotOptions } from './rate-limit/slot-options.js';
export { PendingSlot } from './max-pending/pending-slot.decorator.js';
export type { MaxPendingOptions } from './max-pending/max-pending.metadata.js';
export { RedisLimitError, RedisScriptError, RedisTimeoutError, RedisUnavailableError, type RedisLimitErrorCode } from './errors.js';
export { aclRules, type AclOptions } from './redis/acl.js';
export { RedisLimitEvents } from './observability/redis-limit-events.js';
export {
  RedisLimitHealthIndicator,
  type QueueHealthThresholds,
  type RedisLimitHealthDetail,
  type RedisLimitHealthOptions,
  type RedisLimitHealthResult,
} from './health/redis-limit.health.js';
export type { LimitVerdict, RedisLimitCounters, RedisLimitEvent, RedisLimitEventType, RedisLimitListener } from './observability/events.js';
export type { CountIf, RequestOutcome } from './rate-limit/rate-limit.metadata.js';
export type { ShadowVerdict } from './observability/events.js';
export type { LimitOperationOptions } from './rate-limit/decision.types.js';
export type { AppliedOverride, LimitOverride, OverridePolicy } from './rate-limit/overrides-policy.js';
export type { NamedLimit } from './rate-limit/overrides-declared.js';
export { RedisLimitDashboardModule } from './dashboard/dashboard.module.js';
export type { RedisLimitDashboardOptions } from './dashboard/dashboard.options.js';

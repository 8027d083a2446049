import { RateLimitReply } from '../redis/replies.js';
import type { RateLimitDecideSpec, RateLimitDecideStack, RateLimitDecideStackReply } from '../redis/script-bindings.generated.js';
import { replyFailure, type ScriptRunner } from '../redis/scripts.js';
import { TurnBatcher } from '../redis/turn-batch.js';

/** Stacks per script call: bounds how long one batch holds Redis (about 5 µs per limit here). */
const MAX_STACKS = 128;

/** A stack decide.lua decided (one whose Redis call failed rejects instead), and the call's clock
 * (grant ids of token buckets carry it). */
export type DecidedStack = Exclude<RateLimitDecideStackReply, { verdict: typeof RateLimitReply.STACK_FAILED }> & { now: number };

/** A stack waiting for its call: its keys, whether it consumes, and decide.lua's spec per limit. */
interface Pending {
  keys: readonly string[];
  consume: '1' | '0';
  limits: readonly RateLimitDecideSpec[];
  resolve: (stack: DecidedStack) => void;
  reject: (error: unknown) => void;
}

/**
 * Sends the stacks decided in one turn of the event loop as one decide.lua call per cluster slot
 * (TurnBatcher). Each stack is still atomic on its own, and a stack whose Redis call fails fails
 * alone.
 */
export class DecisionBatcher {
  private readonly turn: TurnBatcher<Pending>;

  constructor(
    private readonly scripts: ScriptRunner,
    /** Group by slot: a cluster runs each call on the node that owns its keys. */
    cluster: boolean,
  ) {
    this.turn = new TurnBatcher((batch) => this.send(batch), cluster, MAX_STACKS);
  }

  /** Decides one stack: its keys (one per limit), whether it consumes ('1') or peeks ('0'), and
   * decide.lua's spec for each limit. */
  decide(keys: readonly string[], consume: '1' | '0', limits: readonly RateLimitDecideSpec[], now?: number): Promise<DecidedStack> {
    return new Promise((resolve, reject) => {
      const pending: Pending = { keys, consume, limits, resolve, reject };
      // the test hook's explicit clock is per call; it never shares a batch
      if (now !== undefined) this.send([pending], now);
      else this.turn.add(keys[0]!, pending);
    });
  }

  private send(batch: Pending[], now?: number): void {
    const states: string[] = [];
    for (const pending of batch) states.push(...pending.keys);
    // Each distinct spec goes once and stacks name it by number: a batch mostly repeats one or
    // a few, and every value sent costs Node and Redis alike.
    const specs: RateLimitDecideSpec[] = [];
    const numbers = new Map<string, number>();
    // the spec numbered last, which the next stack most often repeats: compared field by field,
    // without building its id
    let last: RateLimitDecideSpec | undefined;
    let lastNumber = 0;
    const numberOf = (spec: RateLimitDecideSpec): number => {
      if (
        last !== undefined &&
        spec.algorithm === last.algorithm &&
        spec.limit === last.limit &&
        spec.windowMs === last.windowMs &&
        spec.permits === last.permits
      ) {
        return lastNumber;
      }
      const id = `${spec.algorithm} ${spec.limit} ${spec.windowMs} ${spec.permits}`;
      let number = numbers.get(id);
      if (number === undefined) {
        number = specs.push(spec);
        numbers.set(id, number);
      }
      last = spec;
      lastNumber = number;
      return number;
    };
    const stacks = batch.map(({ consume, limits }): RateLimitDecideStack => ({ consume, limits: limits.map(numberOf) }));
    this.scripts.call('rateLimitDecide', { keys: { states }, args: { now, specs, stacks } }).then(
      ({ now, stacks }) => stacks.forEach((stack, i) => resolveStack(stack, batch[i]!, now)),
      (error: unknown) => batch.forEach((pending) => pending.reject(error)),
    );
  }
}

function resolveStack(stack: RateLimitDecideStackReply, pending: Pending, now: number): void {
  if (stack.verdict === RateLimitReply.STACK_FAILED) pending.reject(replyFailure('rateLimitDecide', new Error(stack.error)));
  else pending.resolve({ verdict: stack.verdict, limits: stack.limits, now });
}

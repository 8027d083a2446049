import type { ConcurrencySlotsOp, ConcurrencySlotsResultReply } from '../redis/script-bindings.generated.js';
import { replyFailure, type ScriptRunner } from '../redis/scripts.js';
import { TurnBatcher } from '../redis/turn-batch.js';

/** Operations per script call: bounds how long one batch holds Redis. */
const MAX_OPS = 128;

/** slots.lua's reply to an operation that did not fail. */
export type SlotResult = Omit<ConcurrencySlotsResultReply, 'error'>;

interface Pending extends ConcurrencySlotsOp {
  key: string;
  resolve: (result: SlotResult) => void;
  reject: (error: unknown) => void;
}

/**
 * Sends the slot operations (acquire, renew, release) made in one turn of the event loop as one
 * slots.lua call per cluster slot (TurnBatcher): a route under `@MaxConcurrent` takes and gives
 * back a slot per request, and a busy app's requests share the calls. Each operation is atomic on
 * its own, and one whose Redis call fails fails alone.
 */
export class SlotBatcher {
  private readonly turn: TurnBatcher<Pending>;

  constructor(
    private readonly scripts: ScriptRunner,
    cluster: boolean,
  ) {
    this.turn = new TurnBatcher((batch) => this.send(batch), cluster, MAX_OPS);
  }

  /** Runs `op` on the slots at `key`. */
  run(key: string, op: ConcurrencySlotsOp): Promise<SlotResult> {
    return new Promise((resolve, reject) => this.turn.add(key, { key, ...op, resolve, reject }));
  }

  private send(batch: Pending[]): void {
    const slots = batch.map((pending) => pending.key);
    this.scripts.call('slots', { keys: { slots }, args: { ops: batch } }).then(
      ({ results }) =>
        results.forEach((result, i) => {
          const pending = batch[i]!;
          if (result.done === -1) pending.reject(replyFailure('slots', new Error(result.error)));
          else pending.resolve(result);
        }),
      (error: unknown) => batch.forEach((pending) => pending.reject(error)),
    );
  }
}

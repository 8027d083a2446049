import type { DelayedMessage } from './delay-queue.types.js';

/**
 * The narrow port through which a part of the library rides the queue with messages of its own
 * (ExpiringHash's expiry notifications). Such a message is marked in Redis when it is enqueued
 * (its source, `'<kind> <ref>'`, message-fields.lua's 't:'), and its claim hands the mark back:
 * nothing is guessed from a message's id or payload, so a user's message is never taken for one.
 */
export interface MessageSource {
  /**
   * Done to a handled message of this source, or one about to die, before its outcome is
   * recorded; `ref` is what the source enqueued it with. Resolves ms to wait first (the message
   * stays leased meanwhile, taking no handler's room); 0 for none. It never rejects.
   */
  beforeOutcome(ref: string, message: DelayedMessage): Promise<number>;
}

/** Enqueues a message of a source, marked with `ref` (the message of an id already queued keeps
 * what it had). */
export type SourceEnqueue = (queue: string, payload: unknown, id: string, ref: string) => Promise<string>;

/** The kind of a recurring schedule's ticks, which the consumer itself advances (RecurringTicks). */
export const TICK_SOURCE = 'tick';

/** The sources registered with a DelayQueueService, by kind. */
export class MessageSources {
  private readonly byKind = new Map<string, MessageSource>();

  register(kind: string, source: MessageSource): void {
    if (kind === TICK_SOURCE || kind.includes(' ')) throw new RangeError(`source kind '${kind}' is reserved or holds a space`);
    this.byKind.set(kind, source);
  }

  /** What `source` (a claim's mark) asks before `message`'s outcome is recorded: ms to wait. A
   * user's message, a tick, or one of a kind no longer registered waits for nothing. */
  beforeOutcome(source: string, message: DelayedMessage): Promise<number> | undefined {
    if (source === '') return undefined;
    const space = source.indexOf(' ');
    const registered = this.byKind.get(space < 0 ? source : source.slice(0, space));
    return registered?.beforeOutcome(space < 0 ? '' : source.slice(space + 1), message);
  }
}

/** A message's mark for `kind` and `ref`. */
export const sourceTag = (kind: string, ref: string): string => `${kind} ${ref}`;

/** Whether a claim's mark says the message is a recurring schedule's tick. */
export const isTick = (source: string): boolean => source.startsWith(`${TICK_SOURCE} `);

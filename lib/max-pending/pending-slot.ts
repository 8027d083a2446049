import type { Logger } from '@nestjs/common';
import type { ExpiringHashService } from '../expiring-hash/expiring-hash.service.js';

// by the request (GraphQL: the field resolution's `info`), without writing on objects not ours
const held = new WeakMap<object, HeldSlot>();

/** The slot a request holds: put on the request by MaxPendingGuard, read by the interceptor and
 * `@PendingSlot()`. */
export interface HeldSlot {
  route: string;
  /** The ExpiringHash key, `${name}:${owner}`. */
  key: string;
  slotId: string;
  /** Whether Redis holds the slot: false once released, and under failMode 'open' when Redis
   * could not reserve it (the id is then only an id). */
  reserved: boolean;
  /** Set when the request gets past every guard to the interceptor. */
  reached: boolean;
}

export function holdSlot(request: object, slot: HeldSlot): void {
  held.set(request, slot);
}

export function heldSlot(request: object): HeldSlot | undefined {
  return held.get(request);
}

/** Deletes a reserved slot, once. A failure is logged, not thrown: the slot then just lives out
 * its ttl, and the caller has a response (or an error) of its own to send. */
export async function releaseSlot(expiringHash: ExpiringHashService, slot: HeldSlot, logger: Logger): Promise<void> {
  if (!slot.reserved) return;
  slot.reserved = false;
  try {
    await expiringHash.delete(slot.key, slot.slotId);
  } catch (error) {
    const reason = (error as Error).message;
    logger.error(`${slot.route}: could not release slot ${slot.slotId} of '${slot.key}' (it will expire by itself): ${reason}`);
  }
}

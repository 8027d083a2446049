import { assertName } from './delay-queue.input.js';
import { describeValue, numberError } from '../validation.js';

/** Ids one retryDead / purgeDead call takes at most: one script call each, kept short. */
export const MAX_DEAD_IDS = 1000;
/** dead()'s page size when `opts.limit` is omitted, and the largest it takes. */
export const DEAD_PAGE_DEFAULT = 100;
export const DEAD_PAGE_MAX = 1000;

/** Where a page of dead messages ends: the last one's time of death and id. */
export interface DeadCursor {
  diedAt: number;
  id: string;
}

/** Opaque to callers (base64url of "diedAt:id"), so nobody builds one by hand. */
export function encodeCursor(cursor: DeadCursor): string {
  return Buffer.from(`${cursor.diedAt}:${cursor.id}`).toString('base64url');
}

export function decodeCursor(cursor: unknown, argument: string): DeadCursor {
  if (typeof cursor === 'string' && /^[A-Za-z0-9_-]+$/.test(cursor)) {
    const match = /^(\d{1,16}):(.+)$/s.exec(Buffer.from(cursor, 'base64url').toString());
    const diedAt = Number(match?.[1]);
    if (match && Number.isSafeInteger(diedAt) && encodeCursor({ diedAt, id: match[2]! }) === cursor) return { diedAt, id: match[2]! };
  }
  throw new TypeError(`${argument} must be a cursor returned by dead(), got ${describeValue(cursor)}`);
}

/** dead()'s options checked: the page size and where it starts. */
export function resolveDeadPage(opts: unknown): { limit: number; after: DeadCursor | undefined } {
  if (typeof opts !== 'object' || opts === null) throw new TypeError(`opts must be an object { limit?, cursor? }, got ${describeValue(opts)}`);
  const { limit = DEAD_PAGE_DEFAULT, cursor, ...rest } = opts as { limit?: unknown; cursor?: unknown };
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new TypeError(`opts.${unknown} is not an option (limit, cursor)`);
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > DEAD_PAGE_MAX) {
    throw new (numberError(limit))(`opts.limit must be an integer from 1 to ${DEAD_PAGE_MAX}, got ${describeValue(limit)}`);
  }
  return { limit, after: cursor === undefined || cursor === null ? undefined : decodeCursor(cursor, 'opts.cursor') };
}

/** retryDead / purgeDead ids: undefined for all, else 1..1000 names, duplicates dropped. */
export function resolveDeadIds(ids: unknown): string[] | undefined {
  if (ids === undefined) return undefined;
  if (!Array.isArray(ids)) throw new TypeError(`ids must be an array of message ids, or omitted for all, got ${describeValue(ids)}`);
  if (ids.length > MAX_DEAD_IDS) throw new RangeError(`ids must hold at most ${MAX_DEAD_IDS} ids per call, got ${ids.length}`);
  ids.forEach((id, i) => assertName(id, `ids[${i}]`));
  return [...new Set(ids as string[])];
}

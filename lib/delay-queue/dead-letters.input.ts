import { assertName } from './delay-queue.input.js';
import { assertKnownOptions, describeValue, numberError } from '../validation.js';
import type { ListOptions } from './delay-queue.types.js';

/** Ids one retryDead / purgeDead call takes at most: one script call each, kept short. */
export const MAX_DEAD_IDS = 1000;
/** dead()'s and list()'s page size when `opts.limit` is omitted, and the largest they take. */
export const PAGE_DEFAULT = 100;
export const PAGE_MAX = 1000;

/** Where a page of one of a queue's sets ends (dead(), list()): the last message's score and id. */
export interface PageCursor {
  score: number;
  id: string;
}

/** Opaque to callers (base64url of "score:id"), so nobody builds one by hand. */
export function encodeCursor(cursor: PageCursor): string {
  return Buffer.from(`${cursor.score}:${cursor.id}`).toString('base64url');
}

/** `method` names what returned it, for the error. */
export function decodeCursor(cursor: unknown, argument: string, method: string): PageCursor {
  if (typeof cursor === 'string' && /^[A-Za-z0-9_-]+$/.test(cursor)) {
    // a score is whole ms but for a rate limit's deferral, which may fall between two
    const match = /^(\d{1,16}(?:\.\d{1,17})?):(.+)$/s.exec(Buffer.from(cursor, 'base64url').toString());
    const score = Number(match?.[1]);
    if (match && Number.isFinite(score) && encodeCursor({ score, id: match[2]! }) === cursor) return { score, id: match[2]! };
  }
  throw new TypeError(`${argument} must be a cursor returned by ${method}, got ${describeValue(cursor)}`);
}

/** dead()'s options checked: the page size and where it starts. */
export function resolveDeadPage(opts: unknown): { limit: number; after: PageCursor | undefined } {
  if (typeof opts !== 'object' || opts === null) throw new TypeError(`opts must be an object { limit?, cursor? }, got ${describeValue(opts)}`);
  assertKnownOptions(opts, ['limit', 'cursor'], 'opts');
  const { limit, cursor } = opts as { limit?: unknown; cursor?: unknown };
  return resolvePage(limit, cursor, 'dead()');
}

/** list()'s options checked: the set, the page size and where it starts. */
export function resolveListPage(opts: unknown): { state: ListOptions['state']; limit: number; after: PageCursor | undefined } {
  if (typeof opts !== 'object' || opts === null) throw new TypeError(`opts must be an object { state, limit?, cursor? }, got ${describeValue(opts)}`);
  assertKnownOptions(opts, ['state', 'limit', 'cursor'], 'opts');
  const { state, limit, cursor } = opts as { state?: unknown; limit?: unknown; cursor?: unknown };
  if (state !== 'scheduled' && state !== 'in-flight') {
    throw new TypeError(`opts.state must be 'scheduled' or 'in-flight' (dead messages are paged by dead()), got ${describeValue(state)}`);
  }
  return { state, ...resolvePage(limit, cursor, 'list()') };
}

function resolvePage(limit: unknown = PAGE_DEFAULT, cursor: unknown, method: string): { limit: number; after: PageCursor | undefined } {
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > PAGE_MAX) {
    throw new (numberError(limit))(`opts.limit must be an integer from 1 to ${PAGE_MAX}, got ${describeValue(limit)}`);
  }
  return { limit, after: cursor === undefined || cursor === null ? undefined : decodeCursor(cursor, 'opts.cursor', method) };
}

/** retryDead / purgeDead ids: undefined for all, else 1..1000 names, duplicates dropped. */
export function resolveDeadIds(ids: unknown): string[] | undefined {
  if (ids === undefined) return undefined;
  if (!Array.isArray(ids)) throw new TypeError(`ids must be an array of message ids, or omitted for all, got ${describeValue(ids)}`);
  if (ids.length > MAX_DEAD_IDS) throw new RangeError(`ids must hold at most ${MAX_DEAD_IDS} ids per call, got ${ids.length}`);
  ids.forEach((id, i) => assertName(id, `ids[${i}]`));
  return [...new Set(ids as string[])];
}

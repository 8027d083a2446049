import type { Keyspace } from './memory-keyspace.js';
import { ReplyError, type MemoryReply } from './memory-keyspace.js';
import { SortedSet } from './sorted-set.js';

/** What a command may use of the server it runs on. */
export interface CommandContext {
  keys: Keyspace;
  /** The server's clock, in ms. */
  now(): number;
  /** Delivers `message` to the channel's subscribers; how many received it. */
  publish(channel: string, message: string): number;
  subscribers(channel: string): number;
}

type Command = (ctx: CommandContext, args: string[]) => MemoryReply;

const OK = { ok: 'OK' };
const syntaxError = () => new ReplyError('ERR syntax error');

function integer(text: string | undefined): number {
  const n = Number(text);
  if (text === undefined || !/^-?\d+$/.test(text) || !Number.isSafeInteger(n)) throw new ReplyError('ERR value is not an integer or out of range');
  return n;
}

function float(text: string | undefined): number {
  const lower = text?.toLowerCase();
  if (lower === '+inf' || lower === 'inf') return Infinity;
  if (lower === '-inf') return -Infinity;
  const n = Number(text);
  if (text === undefined || text.trim() === '' || Number.isNaN(n)) throw new ReplyError('ERR value is not a valid float');
  return n;
}

/** A score as Redis prints one. */
export function formatScore(score: number): string {
  if (score === Infinity) return 'inf';
  if (score === -Infinity) return '-inf';
  return String(score);
}

/** A score bound of ZRANGEBYSCORE and friends: '(' makes it exclusive. */
function bound(text: string): { value: number; inclusive: boolean } {
  return text.startsWith('(') ? { value: float(text.slice(1)), inclusive: false } : { value: float(text), inclusive: true };
}

function inRange(score: number, min: { value: number; inclusive: boolean }, max: { value: number; inclusive: boolean }): boolean {
  const aboveMin = min.inclusive ? score >= min.value : score > min.value;
  const belowMax = max.inclusive ? score <= max.value : score < max.value;
  return aboveMin && belowMax;
}

/** Members with scores in [min, max], in order. */
function byScore(zset: SortedSet, min: string, max: string): string[] {
  const lo = bound(min);
  const hi = bound(max);
  const out: string[] = [];
  for (let i = zset.firstFrom(lo.value, lo.inclusive); i < zset.size; i++) {
    const member = zset.members[i]!;
    if (!inRange(zset.scores.get(member)!, lo, hi)) break;
    out.push(member);
  }
  return out;
}

/** Redis's index range: negatives count from the end, clamped to the list. */
function indexRange(length: number, startText: string, stopText: string): [number, number] {
  let start = integer(startText);
  let stop = integer(stopText);
  if (start < 0) start = Math.max(0, length + start);
  if (stop < 0) stop = length + stop;
  return [start, Math.min(stop, length - 1)];
}

function withScores(zset: SortedSet, members: string[], scores: boolean): string[] {
  return scores ? members.flatMap((m) => [m, formatScore(zset.scores.get(m)!)]) : members;
}

/** ZRANGE key start stop [BYSCORE] [REV] [LIMIT offset count] [WITHSCORES], and ZRANGEBYSCORE's
 * own form through it. */
function zrange(ctx: CommandContext, [key, start, stop, ...rest]: string[], byScoreForm = false): MemoryReply {
  if (key === undefined || start === undefined || stop === undefined) throw new ReplyError('ERR wrong number of arguments');
  let scores = false;
  let scored = byScoreForm;
  let reverse = false;
  let limit: [number, number] | undefined;
  for (let i = 0; i < rest.length; i++) {
    const option = rest[i]!.toUpperCase();
    if (option === 'WITHSCORES') scores = true;
    else if (option === 'BYSCORE') scored = true;
    else if (option === 'REV') reverse = true;
    else if (option === 'LIMIT') {
      limit = [integer(rest[i + 1]), integer(rest[i + 2])];
      i += 2;
    } else throw syntaxError();
  }
  const zset = ctx.keys.read(key, 'zset');
  if (zset === undefined) return [];
  let members: string[];
  if (scored) {
    members = reverse ? byScore(zset, stop, start).reverse() : byScore(zset, start, stop);
    if (limit) members = members.slice(limit[0], limit[1] < 0 ? undefined : limit[0] + limit[1]);
  } else {
    const ordered = reverse ? [...zset.members].reverse() : zset.members;
    const [from, to] = indexRange(ordered.length, start, stop);
    members = from > to ? [] : ordered.slice(from, to + 1);
  }
  return withScores(zset, members, scores);
}

function zadd(ctx: CommandContext, [key, ...rest]: string[]): MemoryReply {
  let i = 0;
  const flags = new Set<string>();
  while (i < rest.length && ['NX', 'XX', 'GT', 'LT', 'CH', 'INCR'].includes(rest[i]!.toUpperCase())) flags.add(rest[i++]!.toUpperCase());
  const pairs = rest.slice(i);
  if (key === undefined || pairs.length === 0 || pairs.length % 2 !== 0) throw syntaxError();
  if (flags.has('NX') && flags.has('XX')) throw new ReplyError('ERR XX and NX options at the same time are not compatible');
  if ((flags.has('GT') && flags.has('LT')) || (flags.has('NX') && (flags.has('GT') || flags.has('LT')))) {
    throw new ReplyError('ERR GT, LT, and/or NX options at the same time are not compatible');
  }
  if (flags.has('INCR') && pairs.length > 2) throw new ReplyError('ERR INCR option supports a single increment-element pair');
  const parsed = [];
  for (let p = 0; p < pairs.length; p += 2) parsed.push({ score: float(pairs[p]), member: pairs[p + 1]! });
  const zset = ctx.keys.write(key, 'zset');
  let changed = 0;
  let result: number | null = null;
  for (const { score, member } of parsed) {
    const old = zset.scores.get(member);
    if ((flags.has('NX') && old !== undefined) || (flags.has('XX') && old === undefined)) continue;
    const next = flags.has('INCR') ? (old ?? 0) + score : score;
    if (old !== undefined && ((flags.has('GT') && next <= old) || (flags.has('LT') && next >= old))) continue;
    const added = zset.add(member, next);
    if (added || (flags.has('CH') && old !== next)) changed++;
    result = next;
  }
  ctx.keys.dropIfEmpty(key);
  if (flags.has('INCR')) return result === null ? null : formatScore(result);
  return changed;
}

/** KEYS / SCAN MATCH patterns: * ? [set] and \ escapes. */
function globMatch(pattern: string, text: string): boolean {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') source += '[\\s\\S]*';
    else if (c === '?') source += '[\\s\\S]';
    else if (c === '\\' && i + 1 < pattern.length) source += escape(pattern[++i]!);
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) source += '\\[';
      else {
        const body = pattern.slice(i + 1, end);
        source += `[${body.startsWith('^') ? '^' + escapeClass(body.slice(1)) : escapeClass(body)}]`;
        i = end;
      }
    } else source += escape(c);
  }
  return new RegExp(`^${source}$`).test(text);
}

const escape = (c: string) => c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const escapeClass = (body: string) => body.replace(/[\\\]]/g, '\\$&');

/** SCAN's and HSCAN's options: everything in one page, cursor 0. */
function scanOptions(rest: string[]): { match: string | undefined; type: string | undefined } {
  let match: string | undefined;
  let type: string | undefined;
  for (let i = 0; i < rest.length; i += 2) {
    const option = rest[i]!.toUpperCase();
    if (option === 'MATCH') match = rest[i + 1];
    else if (option === 'TYPE') type = rest[i + 1]?.toLowerCase();
    else if (option !== 'COUNT') throw syntaxError();
  }
  return { match, type };
}

function ttl(ctx: CommandContext, key: string | undefined, unit: number, absolute: boolean): number {
  const at = ctx.keys.expiry(key!);
  if (at === null) return -2;
  if (at === undefined) return -1;
  return absolute ? Math.round(at / unit) : Math.round((at - ctx.now()) / unit);
}

function expire(ctx: CommandContext, [key, time, ...flags]: string[], toAt: (n: number) => number): number {
  const at = toAt(integer(time));
  const old = ctx.keys.expiry(key!);
  if (old === null) return 0;
  const flag = flags[0]?.toUpperCase();
  if (flag === 'NX' && old !== undefined) return 0;
  if (flag === 'XX' && old === undefined) return 0;
  if (flag === 'GT' && (old === undefined || at <= old)) return 0;
  if (flag === 'LT' && old !== undefined && at >= old) return 0;
  return ctx.keys.expireAt(key!, at) ? 1 : 0;
}

/** HDEL, ZREM, SREM: removes each name from the collection at `key`; how many were there. An
 * emptied collection goes with its key, as on Redis. */
function removeEach(ctx: CommandContext, key: string, type: 'hash' | 'zset' | 'set', names: string[]): number {
  const collection = ctx.keys.read(key, type);
  if (collection === undefined) return 0;
  const removed = names.filter((name) => (collection instanceof SortedSet ? collection.remove(name) : collection.delete(name))).length;
  ctx.keys.dropIfEmpty(key);
  return removed;
}

function hashField(ctx: CommandContext, key: string | undefined): Map<string, string> | undefined {
  return ctx.keys.read(key!, 'hash');
}

/** Every command the memory server knows, by upper-case name. EVAL, SCRIPT and the pub/sub
 * commands of a connection are the server's and the client's own (memory-server.ts). */
export const COMMANDS: Record<string, Command> = {
  PING: (_ctx, [message]) => (message === undefined ? { ok: 'PONG' } : message),
  ECHO: (_ctx, [message]) => message ?? null,
  SELECT: (_ctx, [db]) => {
    if (integer(db) !== 0) throw new ReplyError('ERR DB index is out of range');
    return OK;
  },
  TIME: (ctx) => {
    const now = ctx.now();
    return [String(Math.floor(now / 1000)), String((now % 1000) * 1000)];
  },
  DBSIZE: (ctx) => ctx.keys.keys().length,
  FLUSHALL: (ctx) => (ctx.keys.clear(), OK),
  FLUSHDB: (ctx) => (ctx.keys.clear(), OK),
  KEYS: (ctx, [pattern]) => ctx.keys.keys().filter((key) => globMatch(pattern!, key)),
  SCAN: (ctx, [, ...rest]) => {
    const { match, type } = scanOptions(rest);
    return ['0', ctx.keys.keys().filter((key) => (match === undefined || globMatch(match, key)) && (type === undefined || ctx.keys.type(key) === type))];
  },
  TYPE: (ctx, [key]) => ({ ok: ctx.keys.type(key!) }),
  EXISTS: (ctx, keys) => keys.filter((key) => ctx.keys.exists(key)).length,
  DEL: (ctx, keys) => keys.filter((key) => ctx.keys.delete(key)).length,
  UNLINK: (ctx, keys) => keys.filter((key) => ctx.keys.delete(key)).length,
  PEXPIRE: (ctx, args) => expire(ctx, args, (ms) => ctx.now() + ms),
  EXPIRE: (ctx, args) => expire(ctx, args, (s) => ctx.now() + s * 1000),
  PEXPIREAT: (ctx, args) => expire(ctx, args, (at) => at),
  PTTL: (ctx, [key]) => ttl(ctx, key, 1, false),
  TTL: (ctx, [key]) => ttl(ctx, key, 1000, false),
  PEXPIRETIME: (ctx, [key]) => ttl(ctx, key, 1, true),
  PERSIST: (ctx, [key]) => (ctx.keys.expiry(key!) == null ? 0 : (ctx.keys.expireAt(key!, undefined), 1)),

  // an opaque serialization, as Redis's: only RESTORE (of this engine) reads it
  DUMP: (ctx, [key]) => ctx.keys.dump(key!),
  RESTORE: (ctx, [key, ttlText, payload, ...options]) => {
    const replace = options.some((option) => option.toUpperCase() === 'REPLACE');
    if (!replace && ctx.keys.exists(key!)) throw new ReplyError('BUSYKEY Target key name already exists.');
    const ttlMs = integer(ttlText);
    const absolute = options.some((option) => option.toUpperCase() === 'ABSTTL');
    ctx.keys.restore(key!, payload!, ttlMs === 0 ? undefined : absolute ? ttlMs : ctx.now() + ttlMs);
    return OK;
  },
  GET: (ctx, [key]) => ctx.keys.read(key!, 'string') ?? null,
  SET: (ctx, [key, value, ...options]) => {
    let at: number | undefined;
    let condition: string | undefined;
    let keep = false;
    for (let i = 0; i < options.length; i++) {
      const option = options[i]!.toUpperCase();
      if (option === 'NX' || option === 'XX') condition = option;
      else if (option === 'KEEPTTL') keep = true;
      else if (option === 'PX') at = ctx.now() + integer(options[++i]);
      else if (option === 'EX') at = ctx.now() + integer(options[++i]) * 1000;
      else if (option === 'PXAT') at = integer(options[++i]);
      else throw syntaxError();
    }
    const exists = ctx.keys.exists(key!);
    if ((condition === 'NX' && exists) || (condition === 'XX' && !exists)) return null;
    const kept = keep ? ctx.keys.expiry(key!) : undefined;
    ctx.keys.setString(key!, value!);
    if (at !== undefined || kept != null) ctx.keys.expireAt(key!, at ?? kept ?? undefined);
    return OK;
  },
  // a string's bytes from `offset` on, in place: its expiry stays (zero bytes pad a short one)
  SETRANGE: (ctx, [key, offsetText, value]) => {
    const offset = integer(offsetText);
    if (offset < 0) throw new ReplyError('ERR offset is out of range');
    const current = ctx.keys.read(key!, 'string') ?? '';
    if (value!.length === 0) return current.length;
    const padded = current.padEnd(offset, '\0');
    const next = padded.slice(0, offset) + value! + padded.slice(offset + value!.length);
    const kept = ctx.keys.expiry(key!);
    ctx.keys.setString(key!, next);
    if (kept != null) ctx.keys.expireAt(key!, kept);
    return next.length;
  },

  HSET: (ctx, [key, ...pairs]) => {
    if (pairs.length === 0 || pairs.length % 2 !== 0) throw new ReplyError("ERR wrong number of arguments for 'hset' command");
    const hash = ctx.keys.write(key!, 'hash');
    let added = 0;
    for (let i = 0; i < pairs.length; i += 2) {
      if (!hash.has(pairs[i]!)) added++;
      hash.set(pairs[i]!, pairs[i + 1]!);
    }
    return added;
  },
  HSETNX: (ctx, [key, field, value]) => {
    const hash = ctx.keys.write(key!, 'hash');
    if (hash.has(field!)) return 0;
    hash.set(field!, value!);
    return 1;
  },
  HGET: (ctx, [key, field]) => hashField(ctx, key)?.get(field!) ?? null,
  HMGET: (ctx, [key, ...fields]) => {
    const hash = hashField(ctx, key);
    return fields.map((field) => hash?.get(field) ?? null);
  },
  HEXISTS: (ctx, [key, field]) => (hashField(ctx, key)?.has(field!) ? 1 : 0),
  HLEN: (ctx, [key]) => hashField(ctx, key)?.size ?? 0,
  HKEYS: (ctx, [key]) => [...(hashField(ctx, key)?.keys() ?? [])],
  HVALS: (ctx, [key]) => [...(hashField(ctx, key)?.values() ?? [])],
  HGETALL: (ctx, [key]) => [...(hashField(ctx, key)?.entries() ?? [])].flat(),
  HSCAN: (ctx, [key, , ...rest]) => {
    const { match } = scanOptions(rest);
    const entries = [...(hashField(ctx, key)?.entries() ?? [])].filter(([field]) => match === undefined || globMatch(match, field));
    return ['0', entries.flat()];
  },
  HDEL: (ctx, [key, ...fields]) => removeEach(ctx, key!, 'hash', fields),
  HINCRBY: (ctx, [key, field, by]) => {
    const delta = integer(by);
    const hash = ctx.keys.write(key!, 'hash');
    const old = hash.get(field!);
    if (old !== undefined && !/^-?\d+$/.test(old)) throw new ReplyError('ERR hash value is not an integer');
    const next = Number(old ?? 0) + delta;
    hash.set(field!, String(next));
    return next;
  },

  ZADD: zadd,
  ZRANGE: (ctx, args) => zrange(ctx, args),
  ZRANGEBYSCORE: (ctx, args) => zrange(ctx, args, true),
  ZREVRANGE: (ctx, [key, start, stop, ...rest]) => zrange(ctx, [key!, start!, stop!, 'REV', ...rest]),
  ZSCORE: (ctx, [key, member]) => {
    const score = ctx.keys.read(key!, 'zset')?.scores.get(member!);
    return score === undefined ? null : formatScore(score);
  },
  ZCARD: (ctx, [key]) => ctx.keys.read(key!, 'zset')?.size ?? 0,
  ZCOUNT: (ctx, [key, min, max]) => {
    const zset = ctx.keys.read(key!, 'zset');
    return zset === undefined ? 0 : byScore(zset, min!, max!).length;
  },
  ZRANK: (ctx, [key, member]) => {
    const rank = ctx.keys.read(key!, 'zset')?.members.indexOf(member!) ?? -1;
    return rank < 0 ? null : rank;
  },
  ZREM: (ctx, [key, ...members]) => removeEach(ctx, key!, 'zset', members),
  ZREMRANGEBYSCORE: (ctx, [key, min, max]) => {
    const zset = ctx.keys.read(key!, 'zset');
    if (zset === undefined) return 0;
    const doomed = byScore(zset, min!, max!);
    for (const member of doomed) zset.remove(member);
    ctx.keys.dropIfEmpty(key!);
    return doomed.length;
  },

  SADD: (ctx, [key, ...members]) => {
    const set = ctx.keys.write(key!, 'set');
    let added = 0;
    for (const member of members) if (!set.has(member) && set.add(member)) added++;
    return added;
  },
  SREM: (ctx, [key, ...members]) => removeEach(ctx, key!, 'set', members),
  SMEMBERS: (ctx, [key]) => [...(ctx.keys.read(key!, 'set') ?? [])],
  SISMEMBER: (ctx, [key, member]) => (ctx.keys.read(key!, 'set')?.has(member!) ? 1 : 0),
  SCARD: (ctx, [key]) => ctx.keys.read(key!, 'set')?.size ?? 0,

  PUBLISH: (ctx, [channel, message]) => ctx.publish(channel!, message!),
  SPUBLISH: (ctx, [channel, message]) => ctx.publish(channel!, message!),
  PUBSUB: (ctx, [sub, ...channels]) => {
    const which = sub?.toUpperCase();
    if (which !== 'NUMSUB' && which !== 'SHARDNUMSUB') throw syntaxError();
    return channels.flatMap((channel) => [channel, ctx.subscribers(channel)]);
  },
};

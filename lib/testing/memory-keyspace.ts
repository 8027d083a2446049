import { SortedSet } from './sorted-set.js';

/** What a command replies, as Redis's protocol has it: bulk strings are byte strings (one char per
 * byte), `null` is a nil, `{ ok }` a status. An error reply is thrown as a ReplyError. */
export type MemoryReply = string | number | null | { ok: string } | MemoryReply[];

/** Each type of value, by the name TYPE gives it. */
interface Types {
  string: string;
  hash: Map<string, string>;
  zset: SortedSet;
  set: Set<string>;
}

type Value = { [T in keyof Types]: { type: T; value: Types[T] } }[keyof Types];

interface Entry {
  value: Value;
  /** When it expires (ms on the keyspace's clock), or undefined for never. */
  expiresAt: number | undefined;
}

/** An error reply, named as ioredis names one so the library reads it as Redis's answer. */
export class ReplyError extends Error {
  override readonly name = 'ReplyError';
}

const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';

/**
 * The keys of one in-memory server: each with its value and expiry, read on the server's clock,
 * so a key whose time has come is gone for every command at once (as Redis's lazy expiry makes it
 * look), whatever the host's clock says.
 */
export class Keyspace {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly now: () => number) {}

  /** The key's value if it is of `type` (undefined when absent); WRONGTYPE when it is not. */
  read<T extends keyof Types>(key: string, type: T): Types[T] | undefined {
    const entry = this.live(key);
    if (entry === undefined) return undefined;
    if (entry.value.type !== type) throw new ReplyError(WRONGTYPE);
    return entry.value.value as Types[T];
  }

  /** The key's value of `type`, created empty when absent. */
  write<T extends 'hash' | 'zset' | 'set'>(key: string, type: T): Types[T] {
    const existing = this.read(key, type);
    if (existing !== undefined) return existing;
    const value = (type === 'hash' ? new Map() : type === 'zset' ? new SortedSet() : new Set()) as Types[T];
    this.entries.set(key, { value: { type, value } as Value, expiresAt: undefined });
    return value;
  }

  /** Sets a string, dropping any expiry (as SET does). */
  setString(key: string, value: string): void {
    this.entries.set(key, { value: { type: 'string', value }, expiresAt: undefined });
  }

  /** Drops the key when its collection is empty (Redis never keeps an empty one). */
  dropIfEmpty(key: string): void {
    const entry = this.entries.get(key);
    if (entry && entry.value.type !== 'string' && entry.value.value.size === 0) this.entries.delete(key);
  }

  type(key: string): string {
    return this.live(key)?.value.type ?? 'none';
  }

  delete(key: string): boolean {
    return this.live(key) !== undefined && this.entries.delete(key);
  }

  exists(key: string): boolean {
    return this.live(key) !== undefined;
  }

  /** The key's expiry time, undefined for none; null when there is no key. */
  expiry(key: string): number | undefined | null {
    const entry = this.live(key);
    return entry === undefined ? null : entry.expiresAt;
  }

  /** Sets the key's expiry (undefined: none); a time already past deletes it. False when absent. */
  expireAt(key: string, at: number | undefined): boolean {
    const entry = this.live(key);
    if (entry === undefined) return false;
    if (at !== undefined && at <= this.now()) this.entries.delete(key);
    else entry.expiresAt = at;
    return true;
  }

  /** Every live key, in insertion order. */
  keys(): string[] {
    return [...this.entries.keys()].filter((key) => this.live(key) !== undefined);
  }

  /** The key's value as DUMP gives it (null when absent): this engine's own format. */
  dump(key: string): string | null {
    const entry = this.live(key);
    if (entry === undefined) return null;
    const { type, value } = entry.value;
    const body = type === 'string' ? value : type === 'hash' ? [...value] : type === 'zset' ? value.members.map((m) => [m, value.scores.get(m)!]) : [...value];
    return `nrl-memory:${JSON.stringify({ type, body })}`;
  }

  /** Writes a value `dump` gave, expiring at `expiresAt` (undefined: never). */
  restore(key: string, payload: string, expiresAt: number | undefined): void {
    if (!payload.startsWith('nrl-memory:')) throw new ReplyError('ERR DUMP payload version or checksum are wrong');
    const { type, body } = JSON.parse(payload.slice('nrl-memory:'.length)) as { type: keyof Types; body: unknown };
    let value: Value;
    if (type === 'string') value = { type, value: body as string };
    else if (type === 'hash') value = { type, value: new Map(body as [string, string][]) };
    else if (type === 'set') value = { type, value: new Set(body as string[]) };
    else {
      const zset = new SortedSet();
      for (const [member, score] of body as [string, number][]) zset.add(member, score);
      value = { type, value: zset };
    }
    this.entries.set(key, { value, expiresAt });
  }

  clear(): void {
    this.entries.clear();
  }

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry?.expiresAt !== undefined && entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }
}

import type { RedisKeys } from '../redis/keys.js';

/** One hash's keys, named as its scripts take them: one hash tag, so one cluster slot. */
export interface HashKeys {
  /** the hash: fields, values and (index mode) the meta field */
  readonly hash: string;
  /** its bucket index (index mode) */
  readonly index: string;
  /** its armed expiry notifications (the outbox) */
  readonly outbox: string;
}

/** The keys of one expiring hash and of the sweep registry, all from the module's key builder. */
export class ExpiringHashKeys {
  constructor(
    private readonly keys: RedisKeys,
    readonly shards: number,
  ) {}

  /** The hash, its bucket index and its armed notifications. */
  hash(key: string): HashKeys {
    return { hash: this.keys.build('eh', key), index: this.keys.build('ehb', key), outbox: this.keys.build('ehn', key) };
  }

  /** Which of the `shards` registry keys and notification queues serves `key`. */
  shardOf(key: string): number {
    return fnv1a(key) % this.shards;
  }

  /** The index of the registry shard that lists `key` when it has fields to sweep. */
  registryOf(key: string): string {
    return this.registry(this.shardOf(key));
  }

  /** A registry shard's index: bucket name -> when that bucket next needs a look (registry.lua). */
  registry(shard: number): string {
    return this.keys.build('ehr', String(shard), 'due');
  }

  /** The stem of a registry shard's bucket keys: the scripts append `:<bucket name>`, after the
   * shard's hash tag, so every bucket shares the index's slot. */
  registryBuckets(shard: number): string {
    return this.keys.build('ehr', String(shard), 'at');
  }

  /** The key of a bucket the registry index names ('' is 0.1's registry), as registry.lua builds it. */
  registryBucket(shard: number, name: string): string {
    return name === '' ? this.legacyRegistry(shard) : `${this.registryBuckets(shard)}:${name}`;
  }

  /** A registry shard as 0.1 kept it (one sorted set), drained as one more bucket. */
  legacyRegistry(shard: number): string {
    return this.keys.build('ehr', String(shard));
  }

  /** The channel a registry shard's wake-ups go on: the shard's hash tag, so its slot. */
  wakeChannel(shard: number): string {
    return this.keys.build('ehw', String(shard));
  }
}

/** 32-bit FNV-1a over UTF-16 code units: stable across processes and versions. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ScriptAccess } from '../redis/redis-connection.js';

/** Bytes of HMAC-SHA256 kept in an id: 128 bits, far past guessing. */
const MAC_BYTES = 16;
/** A signed id: the script's grant, a dot (no script writes one), the MAC in base64url. */
const SIGNED = /^([^.]+)\.([A-Za-z0-9_-]{22})$/;

/**
 * Grant ids as callers see them: the grant a script returned, authenticated with an HMAC over
 * the counter's Redis key and that grant, so an id names a grant this library made for that
 * counter and nothing else. The scripts read the permits a grant holds from the id itself (no
 * per-grant state on the hot path): an id edited or made up by a client must never reach them.
 *
 * The key is one random secret per Redis and key prefix, made by the first process that needs it
 * (grant-secret.lua) and read by every other, so any instance refunds any instance's grants. It is
 * asked for once per process, before its first charge (and after a failure, again): an app that
 * never charges writes no secret.
 */
export class GrantIds {
  private key: Buffer | undefined;
  private loading: Promise<Buffer> | undefined;

  constructor(private readonly redis: ScriptAccess) {}

  /** The secret, from Redis the first time. A failure is the caller's (a Redis error); the next call asks again. */
  ready(): Buffer | Promise<Buffer> {
    if (this.key !== undefined) return this.key;
    this.loading ??= this.redis.scripts
      .call('rateLimitGrantSecret', { keys: { secret: this.redis.keys.build('grant-secret', 'rate-limit') }, args: { fresh: randomBytes(32).toString('hex') } })
      .then(
        (secret) => (this.key = Buffer.from(secret, 'utf8')),
        (error: unknown) => {
          this.loading = undefined;
          throw error;
        },
      );
    return this.loading;
  }

  /** The id a caller gets for `grant` on `counter` (its Redis key); needs `ready()` to have resolved. */
  sign(counter: string, grant: string): string {
    return `${grant}.${this.mac(this.key!, counter, grant).toString('base64url')}`;
  }

  /**
   * The script's grant inside `id` if this library issued `id` for `counter`, else undefined. In
   * the caller's tick once the secret is known, so a refund's script goes out in the call, as a
   * decision's does (a caller pipelining a command behind it gets it behind).
   */
  open(counter: string, id: string): string | undefined | Promise<string | undefined> {
    const match = SIGNED.exec(id);
    if (match === null) return undefined;
    const key = this.ready();
    return key instanceof Promise ? key.then((loaded) => this.verify(loaded, counter, match)) : this.verify(key, counter, match);
  }

  private verify(key: Buffer, counter: string, [, grant, mac]: RegExpExecArray): string | undefined {
    const given = Buffer.from(mac!, 'base64url');
    return given.length === MAC_BYTES && timingSafeEqual(given, this.mac(key, counter, grant!)) ? grant : undefined;
  }

  private mac(key: Buffer, counter: string, grant: string): Buffer {
    // a counter key may hold any character (a user's key): its length first, so no two pairs meet
    return createHmac('sha256', key).update(`${counter.length}:${counter}\n${grant}`).digest().subarray(0, MAC_BYTES);
  }
}

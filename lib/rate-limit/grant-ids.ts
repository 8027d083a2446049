import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ScriptAccess } from '../redis/redis-connection.js';

/** Characters of the MAC's base64url kept in an id: 132 bits, far past guessing. */
const MAC_CHARS = 22;
/** A signed id: the script's grant, a dot (no script writes one), the MAC in base64url. */
const SIGNED = /^([^.]+)\.([A-Za-z0-9_-]{22})$/;

/**
 * Grant ids as callers see them: the grant a script returned, authenticated with a MAC over
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
  private key: string | undefined;
  private loading: Promise<string> | undefined;

  constructor(private readonly redis: ScriptAccess) {}

  /** The secret, from Redis the first time. A failure is the caller's (a Redis error); the next call asks again. */
  ready(): string | Promise<string> {
    if (this.key !== undefined) return this.key;
    this.loading ??= this.redis.scripts
      .call('rateLimitGrantSecret', { keys: { secret: this.redis.keys.build('grant-secret', 'rate-limit') }, args: { fresh: randomBytes(32).toString('hex') } })
      .then(
        (secret) => (this.key = secret),
        (error: unknown) => {
          this.loading = undefined;
          throw error;
        },
      );
    return this.loading;
  }

  /** The id a caller gets for `grant` on `counter` (its Redis key); needs `ready()` to have resolved. */
  sign(counter: string, grant: string): string {
    return `${grant}.${this.mac(this.key!, counter, grant)}`;
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

  private verify(key: string, counter: string, [, grant, mac]: RegExpExecArray): string | undefined {
    // both are MAC_CHARS ASCII characters (SIGNED): equal lengths, compared in constant time
    return timingSafeEqual(Buffer.from(mac!, 'latin1'), Buffer.from(this.mac(key, counter, grant!), 'latin1')) ? grant : undefined;
  }

  /**
   * SHA-256 over the secret, then the counter and the grant, truncated to MAC_CHARS. A secret-prefix
   * MAC is open to length extension only when the whole digest is shown; 124 of its 256 bits never
   * leave here, so none can be extended. One `hash` call: an HMAC object per grant cost several
   * times as much, on every charge's path.
   */
  private mac(key: string, counter: string, grant: string): string {
    // a counter key may hold any character (a user's key): its length first, so no two pairs meet
    return hash('sha256', `${key}${counter.length}:${counter}\n${grant}`, 'base64url').slice(0, MAC_CHARS);
  }
}

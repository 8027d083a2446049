import { RedisScriptError } from '../errors.js';
import type { RedisConnection } from '../redis/redis-connection.js';
import { HashReply } from '../redis/replies.js';
import type { ExpiringHashOptions } from './expiring-hash.options.js';
import type { ExpiryMode } from './expiring-hash.types.js';
import { detectExpiryMode, detectHsetex } from './expiry-mode.js';

/** How this process writes, as the write scripts take it. */
export interface WritePath {
  /** The mode of hashes it creates: 'n' native, 'i' index. */
  mode: 'n' | 'i';
  /** '1': native field expiry is written with the value in one HSETEX; '0': HSET then HPEXPIREAT. */
  hsetex: '1' | '0';
}

/**
 * Which server commands ExpiringHash writes use: the mode new hashes get, and whether native field
 * expiry goes with the value in one HSETEX. Asked before the first write (concurrent first writes
 * share the question), so no write script meets a command the server lacks or the ACL refuses.
 * The server can lose one later (a failover to an older replica, a rolling downgrade): the write
 * scripts check their path before writing anything (write-path.lua), and a refused write has the
 * path asked again and is made once more. A server that gains one (an upgrade) is not noticed: the
 * path in use works there too, and the next start takes the new one up.
 */
export class WritePaths {
  private knownMode: ExpiryMode | undefined;
  private knownPath: Promise<WritePath> | undefined;

  /** @param option - the module's `expiringHash.mode`
   * @param probeKey - a hash key under the key prefix, for hsetex-probe.lua's ACL check */
  constructor(
    private readonly redis: RedisConnection,
    private readonly option: Required<ExpiringHashOptions>['mode'],
    private readonly probeKey: string,
  ) {}

  /** The mode new hashes get: the module option, with 'auto' resolved by asking the server. */
  async mode(): Promise<ExpiryMode> {
    // until known, asked again on each call: hasCommand keeps the answer, not a failure
    this.knownMode ??= await this.redis.scripts.bounded(
      detectExpiryMode((command) => this.redis.hasCommand(command), this.option),
      'COMMAND INFO',
    );
    return this.knownMode;
  }

  /**
   * Runs a write script (`script`, named `name`) on the current path; when the server refuses that
   * path (its `verdict` is PATH_REFUSED), asks it again and runs the script once more on the new one.
   * @throws RedisScriptError when the server refuses the new path too (nothing was written)
   */
  async write<R>(name: string, script: (path: WritePath) => Promise<R>, verdict: (reply: R) => number): Promise<R> {
    const asked = this.path();
    const reply = await script(await asked);
    if (verdict(reply) !== HashReply.PATH_REFUSED) return reply;
    this.forget(asked);
    const again = await script(await this.path());
    if (verdict(again) !== HashReply.PATH_REFUSED) return again;
    throw new RedisScriptError(
      name,
      new Error('the server lacks, or refuses this user, a command of the write path it was just asked for; nothing was written'),
    );
  }

  private path(): Promise<WritePath> {
    return (this.knownPath ??= this.ask());
  }

  /** Forgets its answer when it failed, or when a cluster listed no master yet: asked again then. */
  private async ask(): Promise<WritePath> {
    try {
      const native = (await this.mode()) === 'native';
      const hsetex = native && (await detectHsetex(() => this.redis.askEveryMaster('hashHsetexProbe', { args: { probeKey: this.probeKey } })));
      if (hsetex === undefined) this.knownPath = undefined;
      return { mode: native ? 'n' : 'i', hsetex: hsetex ? '1' : '0' };
    } catch (error) {
      this.knownPath = undefined;
      throw error;
    }
  }

  /** Forgets `refusedPath` and what it came from, unless a concurrent refused write did already
   * (its calls then share the new question). A mode the option fixes stays: a server without it
   * then fails each write whole, as RedisScriptError (failMode applies), rather than TypeError. */
  private forget(refusedPath: Promise<WritePath>): void {
    if (this.knownPath !== refusedPath && this.knownPath !== undefined) return;
    this.knownPath = undefined;
    if (this.option !== 'auto') return;
    this.knownMode = undefined;
    this.redis.forgetCommand('HPEXPIRE');
  }
}

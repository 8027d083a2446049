import type { Cluster, Redis } from 'ioredis';
import { RedisLimitError, RedisScriptError, RedisTimeoutError, RedisUnavailableError } from '../errors.js';
import { isCluster } from './client.js';
import { SCRIPT_BINDINGS, type Argv, type ScriptSignatures } from './script-bindings.generated.js';
import { COMPILED_SCRIPTS, type CompiledScript } from './scripts.generated.js';

/** Every script the library runs, by the name code calls it with: its file below lua/. */
export const SCRIPT_FILES = {
  rateLimitDecide: 'rate-limit/decide.lua',
  rateLimitRefund: 'rate-limit/refund.lua',
  rateLimitPenalize: 'rate-limit/penalize.lua',
  rateLimitBlock: 'rate-limit/block.lua',
  rateLimitGrantSecret: 'rate-limit/grant-secret.lua',
  rateLimitOverrideSet: 'rate-limit/override-set.lua',
  rateLimitOverrideRead: 'rate-limit/override-read.lua',
  hashSet: 'expiring-hash/set.lua',
  hashGet: 'expiring-hash/get.lua',
  hashEntries: 'expiring-hash/entries.lua',
  hashDelete: 'expiring-hash/delete.lua',
  hashCount: 'expiring-hash/count.lua',
  hashExpire: 'expiring-hash/expire.lua',
  hashUpdate: 'expiring-hash/update.lua',
  hashSweep: 'expiring-hash/sweep.lua',
  hashNotify: 'expiring-hash/notify.lua',
  hashDisarmHandled: 'expiring-hash/disarm-handled.lua',
  hashHsetexProbe: 'expiring-hash/hsetex-probe.lua',
  registryAdd: 'expiring-hash/registry-add.lua',
  registryClaim: 'expiring-hash/registry-claim.lua',
  registryRelease: 'expiring-hash/registry-release.lua',
  queueEnqueue: 'delay-queue/enqueue.lua',
  queueEnqueueMany: 'delay-queue/enqueue-many.lua',
  queueClaim: 'delay-queue/claim.lua',
  queueAdmit: 'delay-queue/admit.lua',
  queueSlotRelease: 'delay-queue/slot-release.lua',
  queueAck: 'delay-queue/ack.lua',
  queueFail: 'delay-queue/fail.lua',
  queueRetryLater: 'delay-queue/retry-later.lua',
  queueRenew: 'delay-queue/renew.lua',
  queueCancel: 'delay-queue/cancel.lua',
  queueReschedule: 'delay-queue/reschedule.lua',
  queueSize: 'delay-queue/size.lua',
  queuePage: 'delay-queue/page.lua',
  queueInspect: 'delay-queue/inspect.lua',
  recurringSet: 'delay-queue/recurring-set.lua',
  recurringAdvance: 'delay-queue/recurring-advance.lua',
  recurringRemove: 'delay-queue/recurring-remove.lua',
  recurringList: 'delay-queue/recurring-list.lua',
  queueRetryDead: 'delay-queue/retry-dead.lua',
  queuePurgeDead: 'delay-queue/purge-dead.lua',
  queueRegistryPrune: 'delay-queue/registry-prune.lua',
  slots: 'concurrency/slots.lua',
} as const satisfies Record<string, keyof ScriptSignatures>;

export type ScriptName = keyof typeof SCRIPT_FILES;
/** A script's keys and arguments, named as its header names them: `{ keys, args }`. */
export type ScriptCall<N extends ScriptName> = ScriptSignatures[(typeof SCRIPT_FILES)[N]]['call'];
/** A script's reply, read as its header names it. */
export type ScriptReply<N extends ScriptName> = ScriptSignatures[(typeof SCRIPT_FILES)[N]]['reply'];
export type RedisClient = Redis | Cluster;

export interface LoadedScript {
  name: ScriptName;
  /** The command name registered on the client: versioned by content, so two library
   * versions sharing one client never run each other's code. */
  command: string;
  /** The source Redis receives, includes resolved. */
  source: string;
  sha1: string;
  /** From the header: how many keys it takes, or undefined when the call says (a group of keys). */
  numberOfKeys: number | undefined;
}

/** The scripts as compiled at build time (scripts/generate-scripts.mjs): no file is read. */
export function loadScripts(): LoadedScript[] {
  return (Object.keys(SCRIPT_FILES) as ScriptName[]).map((name) => {
    const { source, sha1, numberOfKeys }: CompiledScript = COMPILED_SCRIPTS[SCRIPT_FILES[name]];
    return { name, command: `nrl_${name}_${sha1.slice(0, 10)}`, source, sha1, numberOfKeys };
  });
}

/** A script's reply as ioredis gives it (a packed one as a Buffer). */
export type Reply = string | number | null | Buffer | Reply[];

// Error replies that mean "this server cannot serve now", not "the script is wrong".
const TRANSIENT_REPLY = /^(LOADING|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|BUSY|NOREPLICAS|OOM)\b/;

/**
 * Runs the library's scripts on one client: registered once with `defineCommand` (ioredis sends
 * EVALSHA and falls back to EVAL on NOSCRIPT), every call bounded by `timeoutMs`, every failure
 * turned into a RedisLimitError.
 */
export class ScriptRunner {
  private readonly byName = new Map<ScriptName, LoadedScript>();

  constructor(
    readonly client: RedisClient,
    readonly timeoutMs: number,
    scripts: LoadedScript[] = loadScripts(),
  ) {
    for (const script of scripts) {
      this.byName.set(script.name, script);
      if (typeof (client as unknown as Record<string, unknown>)[script.command] !== 'function') {
        client.defineCommand(script.command, { lua: script.source, numberOfKeys: script.numberOfKeys });
      }
    }
  }

  /**
   * Loads every script on every master, so the first burst of calls after a (re)connect runs
   * EVALSHA at once instead of each falling back to EVAL with the whole source.
   */
  async preload(): Promise<void> {
    const servers = isCluster(this.client) ? (this.client as Cluster).nodes('master') : [this.client as Redis];
    const loads = servers.flatMap((server) => [...this.byName.values()].map((s) => server.script('LOAD', s.source)));
    await this.bounded(Promise.all(loads), 'SCRIPT LOAD');
  }

  script(name: ScriptName): LoadedScript {
    return this.byName.get(name)!;
  }

  /**
   * Runs script `name` with its keys and arguments by name (see its header in lua/, or its
   * `…Call` type in script-bindings.generated.ts); resolves its reply, read as the header names it.
   */
  call<N extends ScriptName>(name: N, call: ScriptCall<N>): Promise<ScriptReply<N>> {
    return this.bounded(this.send(name, call), name);
  }

  /** `call` without the timeout: for a caller that must still act on a reply that comes late. */
  send<N extends ScriptName>(name: N, call: ScriptCall<N>): Promise<ScriptReply<N>> {
    const binding = SCRIPT_BINDINGS[SCRIPT_FILES[name]];
    return this.command(name, binding.encode(call)).then((reply) => binding.decode(reply, call));
  }

  /**
   * `call` on each of `servers` by EVAL, each answering for itself: for a keyless script a cluster's
   * nodes need not agree on. Bounded as one call.
   */
  callEach<N extends ScriptName>(servers: readonly Redis[], name: N, call: ScriptCall<N>): Promise<ScriptReply<N>[]> {
    const binding = SCRIPT_BINDINGS[SCRIPT_FILES[name]];
    const { source, numberOfKeys } = this.script(name);
    const argv = binding.encode(call);
    // EVAL takes the key count apart: the argv's own (a group of keys) or the header's
    const [count, rest] = numberOfKeys === undefined ? [argv[0]!, argv.slice(1)] : [numberOfKeys, argv];
    const answers = servers.map((server) =>
      ((binding.packed ? server.callBuffer('EVAL', [source, count, ...rest]) : server.eval(source, count, ...rest)) as Promise<Reply>).then((reply) =>
        binding.decode(reply, call),
      ),
    );
    return this.bounded(Promise.all(answers), name);
  }

  /**
   * Runs script `name` with positional keys and arguments and resolves its raw reply: for tests
   * that drive a script's own layout (its model tests). The library calls `call`.
   */
  run(name: ScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<Reply> {
    const argv = this.script(name).numberOfKeys === undefined ? [keys.length, ...keys, ...args] : [...keys, ...args];
    return this.bounded(this.command(name, argv), name);
  }

  /** The registered command with its argv (the key count first when the call gives it); a
   * script whose reply is packed is asked for a Buffer (ioredis' `…Buffer` method). */
  private command(name: ScriptName, argv: Argv): Promise<Reply> {
    const { command } = this.script(name);
    const method = SCRIPT_BINDINGS[SCRIPT_FILES[name]].packed ? `${command}Buffer` : command;
    const call = (this.client as unknown as Record<string, (...a: Argv) => Promise<Reply>>)[method]!;
    return call.apply(this.client, argv);
  }

  /** Bounds any client promise by `timeoutMs` and types its failure (one timer, one promise:
   * this is on every request's path). */
  bounded<T>(pending: Promise<T>, what: string): Promise<T> {
    return settleWithin(
      pending,
      this.timeoutMs,
      () => new RedisTimeoutError(this.timeoutMs, what),
      (error) => classify(error, what),
    );
  }
}

/** Settles as `pending` does (its failure as `failure(error)`), or rejects with `late()` after
 * `ms`: one timer, one promise. */
export function settleWithin<T>(pending: Promise<T>, ms: number, late: () => Error, failure: (error: unknown) => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(late()), ms);
    pending.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(failure(error));
      },
    );
  });
}

function classify(error: unknown, what: string): Error {
  // typed already: a timeout, or a reply its script's header does not describe
  if (error instanceof RedisLimitError) return error;
  const isReply = error instanceof Error && error.name === 'ReplyError';
  if (isReply) return replyFailure(what, error);
  return new RedisUnavailableError(what, error);
}

/** An error reply, from Redis or from a script that caught it for one part of a batch. */
export function replyFailure(what: string, error: Error): RedisScriptError | RedisUnavailableError {
  return TRANSIENT_REPLY.test(error.message) ? new RedisUnavailableError(what, error) : new RedisScriptError(what, error);
}

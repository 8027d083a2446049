import { EventEmitter } from 'node:events';
// node:timers' own, which jest's fake timers leave alone: the engine answers whatever a test fakes
import { setImmediate } from 'node:timers';
import type { Clock } from '../redis/clock.js';
import { COMMANDS, formatScore } from './memory-commands.js';
import type { MemoryReply } from './memory-keyspace.js';
import type { MemoryServer } from './memory-server.js';

type Arg = string | number | Buffer;
/** What a command method takes, as ioredis does: arguments, arrays of them, and (for HSET, HMSET
 * and MSET) an object or Map of field → value. */
type Given = Arg | Arg[] | Record<string, Arg> | Map<string, Arg>;

/** The arguments flattened, as ioredis flattens them. */
function flatten(args: Given[]): Arg[] {
  return args.flatMap((arg): Arg[] => {
    if (Array.isArray(arg)) return arg;
    if (arg instanceof Map) return [...arg].flat();
    if (typeof arg === 'object' && !Buffer.isBuffer(arg)) return Object.entries(arg).flat();
    return [arg];
  });
}

/** A byte string (one char per byte) from what a caller passes: text is UTF-8, as ioredis sends it. */
function bytes(arg: Arg): string {
  if (Buffer.isBuffer(arg)) return arg.toString('latin1');
  return Buffer.from(typeof arg === 'number' ? formatScore(arg) : arg, 'utf8').toString('latin1');
}

/** A reply as ioredis gives it: bulk strings decoded as UTF-8 (as Buffers, for a `…Buffer`
 * method), a status as its text. */
function decoded(reply: MemoryReply, buffers = false): unknown {
  if (typeof reply === 'string') return buffers ? Buffer.from(reply, 'latin1') : Buffer.from(reply, 'latin1').toString('utf8');
  if (Array.isArray(reply)) return reply.map((item) => decoded(item, buffers));
  if (reply !== null && typeof reply === 'object') return reply.ok;
  return reply;
}

/** The command methods a client has, as ioredis names them: every command the server knows. */
const COMMAND_METHODS = new Set([...Object.keys(COMMANDS), 'EVAL', 'EVALSHA', 'SCRIPT', 'INFO', 'COMMAND'].map((name) => name.toLowerCase()));

/** Replies ioredis reshapes for its callers. */
const RESHAPED: Record<string, (reply: unknown) => unknown> = {
  hgetall: (reply) => {
    const flat = reply as (string | Buffer)[];
    const out: Record<string, string | Buffer> = {};
    for (let i = 0; i < flat.length; i += 2) {
      const field = flat[i]!;
      out[Buffer.isBuffer(field) ? field.toString('utf8') : field] = flat[i + 1]!;
    }
    return out;
  },
};

/**
 * An ioredis-shaped client of a MemoryServer: what RedisLimitModule (and a test that inspects
 * keys) calls on a client, answered in memory. The command methods of the commands the server
 * knows exist (through a proxy, named as ioredis names them: `hget`, `zrange`); `call` sends any,
 * and one the server does not know fails with Redis's "unknown command" error.
 */
export class MemoryClient extends EventEmitter {
  status: string;
  readonly options: Record<string, unknown> = {};
  /** The server's clock: the module's own timers and caches go by it too (see redis/clock.ts). */
  readonly clock: Clock;
  private readonly unsubscribers = new Map<string, () => void>();

  constructor(
    readonly server: MemoryServer,
    /** A duplicate connects as a new ioredis client does: 'ready' comes on a later turn. */
    connecting = false,
  ) {
    super();
    this.clock = server.clock;
    this.status = connecting ? 'connecting' : 'ready';
    if (connecting) {
      setImmediate(() => {
        if (this.status !== 'connecting') return;
        this.status = 'ready';
        this.emit('connect');
        this.emit('ready');
      });
    }
    return new Proxy(this, {
      get(target, property, receiver) {
        if (typeof property === 'string' && !(property in target)) {
          const buffers = property.endsWith('Buffer');
          const name = buffers ? property.slice(0, -'Buffer'.length) : property;
          if (COMMAND_METHODS.has(name)) return (...args: Given[]) => target.command(name, flatten(args), buffers);
        }
        return Reflect.get(target, property, receiver) as unknown;
      },
    });
  }

  /** `call(name, ...args)`: any command by name. */
  call(name: string, ...args: Given[]): Promise<unknown> {
    return this.command(name, flatten(args));
  }

  /** `call` with Buffers for bulk strings. */
  callBuffer(name: string, ...args: Given[]): Promise<unknown> {
    return this.command(name, flatten(args), true);
  }

  /** As ioredis' defineCommand: a method `name` that runs `lua` with `numberOfKeys` keys (or,
   * when undefined, the count its first argument gives). */
  defineCommand(name: string, { lua, numberOfKeys }: { lua: string; numberOfKeys?: number | undefined }): void {
    // and `name + 'Buffer'`, which replies with Buffers for bulk strings, as ioredis defines both
    for (const buffers of [false, true]) {
      (this as unknown as Record<string, unknown>)[buffers ? `${name}Buffer` : name] = (...args: Arg[]) =>
        this.command('eval', numberOfKeys === undefined ? [lua, ...args] : [lua, numberOfKeys, ...args], buffers);
    }
  }

  duplicate(): MemoryClient {
    return new MemoryClient(this.server, true);
  }

  connect(): Promise<void> {
    return Promise.resolve();
  }

  async quit(): Promise<'OK'> {
    this.disconnect();
    return 'OK';
  }

  disconnect(): void {
    if (this.status === 'end') return;
    for (const unsubscribe of this.unsubscribers.values()) unsubscribe();
    this.unsubscribers.clear();
    this.status = 'end';
    setImmediate(() => {
      this.emit('close');
      this.emit('end');
    });
  }

  subscribe(...channels: string[]): Promise<number> {
    return this.listen(channels, 'message');
  }

  ssubscribe(...channels: string[]): Promise<number> {
    return this.listen(channels, 'smessage');
  }

  unsubscribe(...channels: string[]): Promise<number> {
    for (const channel of channels.length > 0 ? channels : [...this.unsubscribers.keys()]) {
      this.unsubscribers.get(channel)?.();
      this.unsubscribers.delete(channel);
    }
    return Promise.resolve(this.unsubscribers.size);
  }

  sunsubscribe(...channels: string[]): Promise<number> {
    return this.unsubscribe(...channels);
  }

  /** Commands queued and sent together, as ioredis' pipeline and multi: exec() gives
   * [error, reply] per command. */
  pipeline(): Record<string, unknown> {
    const queued: [string, Arg[]][] = [];
    const batch: Record<string, unknown> = new Proxy(
      {},
      {
        get: (_target, property) => {
          if (property === 'exec') {
            return () =>
              Promise.all(
                queued.map(([name, args]) =>
                  this.command(name, args).then(
                    (reply) => [null, reply],
                    (error: unknown) => [error, null],
                  ),
                ),
              );
          }
          if (property === 'length') return queued.length;
          return (...args: Given[]) => {
            queued.push([String(property), flatten(args)]);
            return batch;
          };
        },
      },
    );
    return batch;
  }

  multi(): Record<string, unknown> {
    return this.pipeline();
  }

  private listen(channels: string[], event: 'message' | 'smessage'): Promise<number> {
    if (this.status === 'end') return Promise.reject(new Error('Connection is closed.'));
    for (const channel of channels) {
      if (this.unsubscribers.has(channel)) continue;
      const unsubscribe = this.server.subscribe(bytes(channel), (from, message) => {
        this.emit(event, decoded(from), decoded(message));
      });
      this.unsubscribers.set(channel, unsubscribe);
    }
    return Promise.resolve(this.unsubscribers.size);
  }

  /** Runs the command on a later turn of the event loop, as a reply over a socket comes: timers
   * due meanwhile run first, as they would beside a server. Commands keep the order they were
   * sent in (the server's `ready`, then setImmediate, both first in first out). */
  private command(name: string, args: Arg[], buffers = false): Promise<unknown> {
    if (this.status === 'end') return Promise.reject(new Error('Connection is closed.'));
    const argv = [name, ...args].map(bytes);
    return this.server.ready.then(
      () =>
        new Promise((resolve, reject) => {
          setImmediate(() => {
            try {
              const reply = decoded(this.server.execute(argv), buffers);
              const reshape = RESHAPED[name];
              resolve(reshape === undefined ? reply : reshape(reply));
            } catch (error) {
              reject(error instanceof Error ? error : new Error(String(error)));
            }
          });
        }),
    );
  }
}

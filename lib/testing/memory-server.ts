import { createHash } from 'node:crypto';
// node:timers' own, which jest's fake timers leave alone: the engine answers whatever a test fakes
import { setImmediate } from 'node:timers';
import type { Clock } from '../redis/clock.js';
import { COMMANDS, type CommandContext } from './memory-commands.js';
import { Keyspace, ReplyError, type MemoryReply } from './memory-keyspace.js';
import { loadLuaEngine, type LuaEngine } from './memory-lua.js';

/** A subscriber's inbox: called (later, never inside a command) with each message of its channels. */
export type Inbox = (channel: string, message: string) => void;

/** What INFO server says: a Redis without hash field expiry, so ExpiringHash takes its index mode
 * (HPEXPIRE and HSETEX are not among the commands, and COMMAND INFO says so). */
const INFO_SERVER = '# Server\r\nredis_version:7.2.0\r\nredis_mode:standalone\r\nnest_redis_limit_engine:memory\r\n';

/**
 * One in-memory Redis for `RedisLimitModule.forTesting()`: a keyspace on the test clock, the
 * commands the library sends (memory-commands.ts), its Lua scripts run as they are (memory-lua.ts)
 * and pub/sub between the clients on it. Every command runs whole before the next starts, as on
 * Redis, and nothing here touches the network.
 */
export class MemoryServer {
  readonly keys: Keyspace;
  /** Resolves once the Lua VM is loaded; every command waits for it, so commands keep their order. */
  readonly ready: Promise<LuaEngine>;
  private lua: LuaEngine | undefined;
  private readonly scripts = new Map<string, string>();
  private readonly inboxes = new Map<string, Set<Inbox>>();
  private readonly context: CommandContext;
  /** Calls per command, for INFO commandstats (commands a script runs count too, as on Redis). */
  private readonly calls = new Map<string, number>();

  constructor(
    /** The server's time: it moves only when a test moves it. */
    readonly clock: Clock,
  ) {
    const now = () => clock.now();
    this.keys = new Keyspace(now);
    this.ready = loadLuaEngine().then((lua) => (this.lua = lua));
    this.context = {
      keys: this.keys,
      now,
      publish: (channel, message) => this.publish(channel, message),
      subscribers: (channel) => this.inboxes.get(channel)?.size ?? 0,
    };
  }

  /** Runs one command (its name and arguments as byte strings) and returns its reply; an error
   * reply is thrown as a ReplyError. Call only once `ready` has resolved. */
  execute(args: string[]): MemoryReply {
    const name = args[0]?.toUpperCase() ?? '';
    this.calls.set(name, (this.calls.get(name) ?? 0) + 1);
    const rest = args.slice(1);
    switch (name) {
      case 'EVAL':
        return this.eval(this.load(rest[0]!), rest.slice(1));
      case 'EVALSHA': {
        const sha = rest[0]!.toLowerCase();
        if (!this.scripts.has(sha)) throw new ReplyError('NOSCRIPT No matching script. Please use EVAL.');
        return this.eval(sha, rest.slice(1));
      }
      case 'SCRIPT':
        return this.script(rest);
      case 'INFO':
        return rest[0]?.toLowerCase() === 'commandstats' ? this.commandStats() : INFO_SERVER;
      case 'COMMAND':
        if (rest[0]?.toUpperCase() !== 'INFO') throw new ReplyError('ERR unknown subcommand');
        return rest
          .slice(1)
          .map((command) =>
            COMMANDS[command.toUpperCase()] || ['EVAL', 'EVALSHA', 'SCRIPT', 'INFO'].includes(command.toUpperCase()) ? [command.toLowerCase()] : null,
          );
    }
    const command = COMMANDS[name];
    if (command === undefined) throw new ReplyError(`ERR unknown command '${args[0] ?? ''}', with args beginning with: `);
    return command(this.context, rest);
  }

  /** Adds `inbox` to `channel`'s subscribers; returns what removes it. */
  subscribe(channel: string, inbox: Inbox): () => void {
    let inboxes = this.inboxes.get(channel);
    if (inboxes === undefined) this.inboxes.set(channel, (inboxes = new Set()));
    inboxes.add(inbox);
    return () => {
      inboxes.delete(inbox);
      if (inboxes.size === 0) this.inboxes.delete(channel);
    };
  }

  private commandStats(): string {
    const lines = [...this.calls].map(([name, calls]) => `cmdstat_${name.toLowerCase()}:calls=${calls},usec=0,usec_per_call=0.00`);
    return `# Commandstats\r\n${lines.join('\r\n')}\r\n`;
  }

  private publish(channel: string, message: string): number {
    const inboxes = [...(this.inboxes.get(channel) ?? [])];
    // delivered after the command (and the script that published) has finished, as Redis does
    if (inboxes.length > 0) setImmediate(() => inboxes.forEach((inbox) => inbox(channel, message)));
    return inboxes.length;
  }

  private load(source: string): string {
    const sha = createHash('sha1').update(Buffer.from(source, 'latin1')).digest('hex');
    this.scripts.set(sha, source);
    return sha;
  }

  private script([sub = '', ...rest]: string[]): MemoryReply {
    switch (sub.toUpperCase()) {
      case 'LOAD':
        return this.load(rest[0]!);
      case 'EXISTS':
        return rest.map((sha) => (this.scripts.has(sha.toLowerCase()) ? 1 : 0));
      case 'FLUSH':
        this.scripts.clear();
        return { ok: 'OK' };
      default:
        throw new ReplyError('ERR unknown subcommand');
    }
  }

  private eval(sha: string, [count, ...rest]: string[]): MemoryReply {
    const numberOfKeys = Number(count);
    if (!Number.isInteger(numberOfKeys) || numberOfKeys < 0 || numberOfKeys > rest.length)
      throw new ReplyError('ERR Number of keys can not be greater than number of args');
    if (this.lua === undefined) throw new Error('MemoryServer: a script ran before the Lua VM was loaded');
    const source = this.scripts.get(sha)!;
    // Buffer.from(latin1) of the source: the VM reads bytes; scripts are UTF-8 text
    const text = Buffer.from(source, 'latin1').toString('utf8');
    return this.lua.run(sha, text, rest.slice(0, numberOfKeys), rest.slice(numberOfKeys), (args) => this.execute(args));
  }
}

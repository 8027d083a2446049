import type { RedisClient } from './scripts.js';

/**
 * Whether the server knows `command`, asked with COMMAND INFO rather than guessed from a version
 * string: Valkey 8 reports a Redis-compatible version yet lacks HPEXPIRE. On a cluster this asks
 * one node; every node is expected to run the same server.
 */
export async function serverHasCommand(client: RedisClient, command: string): Promise<boolean> {
  const [info] = (await client.call('COMMAND', 'INFO', command)) as unknown[];
  return Array.isArray(info);
}

// used_memory as the memory benches read it: around a load on a server the bench started.
import type { Redis } from 'ioredis';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** used_memory without client buffers (a pipeline's query buffer is shrunk only after the client
 * idles for seconds, and it belongs to the load, not to the layout); plus the keyspace tables
 * still being rehashed (Redis 8 and Valkey 8 report it; Redis 7.0 does not). */
export async function memoryState(client: Redis): Promise<{ used: number; rehashing: number }> {
  const info = await client.info('memory');
  const stat = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return {
    used: stat('used_memory') - stat('mem_clients_normal') - stat('mem_clients_slaves'),
    rehashing: stat('mem_overhead_db_hashtable_rehashing'),
  };
}

/** used_memory once it stops moving. A keyspace table that grew during the load may still be
 * rehashing; serverCron (10 Hz) finishes it and frees the old table in one go, so wait for that. */
export async function settledMemory(client: Redis): Promise<number> {
  let previous = await memoryState(client);
  for (let i = 0; i < 20; i++) {
    await sleep(250);
    const current = await memoryState(client);
    if (current.rehashing === 0 && Math.abs(current.used - previous.used) < 4096) return current.used;
    previous = current;
  }
  return previous.used;
}

import { Redis } from 'ioredis';

/** One command to one server over a short-lived connection that neither retries nor reports its
 * errors: for a harness to probe servers that may be down. */
export async function ask(address: { host: string; port: number }, ...command: string[]): Promise<unknown> {
  const client = new Redis({ ...address, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(command[0]!, ...command.slice(1));
  } finally {
    client.disconnect();
  }
}

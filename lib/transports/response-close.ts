/** An HTTP response as Express gives it, or a Fastify reply (its `raw` is Node's response). */
interface ClosableResponse {
  once?: (event: 'close', listener: () => void) => unknown;
  /** Node's: true once 'close' has been emitted. */
  closed?: boolean;
  raw?: ClosableResponse;
}

// Per response, what its one 'close' listener runs.
const tasks = new WeakMap<object, (() => void)[]>();

/**
 * Runs `task` once the HTTP response of `response` is done (Node's 'close'). One listener per
 * response however many tasks it gets: a GraphQL operation takes a slot per field, and an
 * eleventh listener would have Node warn of a leak. A response that is none (a subscription over
 * WebSocket has no HTTP response) never runs it: false then.
 */
export function whenClosed(response: unknown, task: () => void): boolean {
  const raw = (response as ClosableResponse | undefined)?.raw ?? (response as ClosableResponse | undefined);
  if (typeof raw?.once !== 'function') return false;
  const queued = tasks.get(raw);
  if (queued !== undefined) {
    queued.push(task);
    return true;
  }
  const first = [task];
  tasks.set(raw, first);
  raw.once('close', () => {
    tasks.delete(raw);
    for (const run of first) run();
  });
  return true;
}

/** Whether the HTTP response of `response` is closed already (its client left while a guard or
 * interceptor waited on Redis): whenClosed's task would then never run. */
export function isClosed(response: unknown): boolean {
  const raw = (response as ClosableResponse | undefined)?.raw ?? (response as ClosableResponse | undefined);
  return raw?.closed === true;
}

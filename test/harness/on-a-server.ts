import { currentTopology } from './redis-server.js';

/** `it` on a real server; on forTesting's in-memory engine (the `:memory` project) no test at all:
 * for an outage, a restart, a reply lost on the wire, a server's internals (MEMORY, OBJECT,
 * CLIENT) or several processes, which an engine inside the test's own process cannot have. */
export function itOnAServer(name: string, fn: jest.ProvidesCallback, timeout?: number): void {
  if (currentTopology() !== 'memory') it(name, fn, timeout);
}

/** `describe` on a real server only (see itOnAServer). */
export function describeOnAServer(name: string, fn: () => void): void {
  if (currentTopology() !== 'memory') describe(name, fn);
}

import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { RedisNode } from './redis-server.js';

/**
 * A loopback address in front of one Redis server, then another: what an application behind a
 * fixed address (a virtual IP, a DNS name, a proxy) sees in a failover to a different server or a
 * rolling up- or downgrade. Each connection is forwarded to the current server; switchTo() drops
 * every open one, so the client reconnects and meets the other server, its data and commands.
 */
export class ServerSwitch {
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    private target: RedisNode,
  ) {
    server.on('connection', (inbound) => this.forward(inbound));
  }

  /** Listens on a free loopback port (an ephemeral one: never 6379), forwarding to `target`. */
  static async start(target: RedisNode): Promise<ServerSwitch> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return new ServerSwitch(server, target);
  }

  /** What a module connects with (the default user: these servers have no ACL of their own). */
  get url(): string {
    return `redis://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** From now on connections reach `target`; the open ones are dropped, as in a failover. */
  switchTo(target: RedisNode): void {
    this.target = target;
    for (const socket of this.sockets) socket.destroy();
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private forward(inbound: Socket): void {
    const outbound = connect(this.target.port, this.target.host);
    for (const [socket, other] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      this.sockets.add(socket);
      // a side that closes ends the other, as a server's own close would (pipe passes on an end)
      socket.pipe(other);
      socket.on('error', () => other.destroy());
      socket.on('close', () => {
        this.sockets.delete(socket);
        other.end();
      });
    }
  }
}

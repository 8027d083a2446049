import { BadRequestException } from '@nestjs/common';
import { ipKey } from './ip-key.js';
import { proxyTrustWarnings } from './proxy-trust.js';

/** An HTTP request as Express and Fastify give it (`ip` honours `trust proxy`), or Node's own. */
export interface HttpClientRequest {
  ip?: string;
  socket?: { remoteAddress?: string };
  headers?: Record<string, string | string[] | undefined>;
}

/**
 * The key of an HTTP request's client: its address (Express and Fastify both honour `trust
 * proxy`; Node's own request has only its socket's), IPv6 masked to `ipv6Subnet` bits (see
 * ipKey). HTTP and GraphQL's default tracker.
 * @throws BadRequestException when the request has no client address (a Unix socket, a connection
 * already gone): one shared counter would let any such client refuse all the others.
 */
export function clientIp(req: HttpClientRequest, ipv6Subnet: number | false): string {
  proxyTrustWarnings.check(req);
  const address = (req.ip ?? req.socket?.remoteAddress)?.trim();
  if (!address) throw new BadRequestException('No client address to rate-limit this request by');
  return ipKey(address, ipv6Subnet);
}

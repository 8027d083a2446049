import { Logger } from '@nestjs/common';

/**
 * How an HTTP request's platform reads `X-Forwarded-For`: 'none' ignores it (the client is the
 * socket's peer), 'every' believes every entry (the client is whatever the left-most one says),
 * 'some' believes the proxies it was told of.
 */
export type ProxyTrust = 'none' | 'some' | 'every';

interface ExpressRequest {
  app: { get(setting: string): unknown };
}

interface FastifyRequest {
  raw: object;
  server: object;
}

/**
 * The proxy trust of the app an Express or Fastify request reached; undefined for any other
 * request (Node's own, as graphql-ws hands it over), which never reads the header.
 */
export function proxyTrustOf(req: object): ProxyTrust | undefined {
  const { app } = req as Partial<ExpressRequest>;
  if (typeof app?.get === 'function') {
    const setting = app.get('trust proxy');
    return setting === true ? 'every' : setting ? 'some' : 'none';
  }
  if ('raw' in req && 'server' in req) {
    // Fastify defines `ips` (documented) only with trustProxy set
    if (!('ips' in req)) return 'none';
    return fastifyTrustsEveryHop((req as FastifyRequest).server) ? 'every' : 'some';
  }
  return undefined;
}

const trustsEveryHop = new WeakMap<object, boolean>();

/**
 * Whether a Fastify server was built with `trustProxy: true`. No public getter has the option
 * (`initialConfig` leaves it out), so it is read where Fastify keeps its options, once per
 * server; a Fastify that keeps them elsewhere reads as false, and goes unwarned.
 */
function fastifyTrustsEveryHop(server: object): boolean {
  let known = trustsEveryHop.get(server);
  if (known === undefined) {
    known = fastifyOptions(server)?.trustProxy === true;
    trustsEveryHop.set(server, known);
  }
  return known;
}

function fastifyOptions(server: object): { trustProxy?: unknown } | undefined {
  // a plugin's instance inherits from its parent's: the root holds the options
  for (let level: object | null = server; level !== null; level = Object.getPrototypeOf(level) as object | null) {
    const key = Object.getOwnPropertySymbols(level).find((symbol) => symbol.description === 'fastify.options');
    if (key !== undefined) return (level as Record<symbol, { trustProxy?: unknown } | undefined>)[key];
  }
  return undefined;
}

/**
 * Reports the proxy set-ups that make the default tracker count wrongly, each once per process:
 * an `X-Forwarded-For` header reaching an app that trusts no proxy (behind a proxy, every client
 * counts as the proxy and they share one counter), and a trust of every hop (a client writes its
 * own address into the header and picks its own counter). express-rate-limit's most-filed
 * mistake is the first one, and nothing else makes it visible.
 */
export class ProxyTrustWarnings {
  private forwardedUntrusted = false;
  private trustEveryHop = false;

  constructor(private readonly logger: Pick<Logger, 'warn'>) {}

  /** Looks at a request the default tracker keys. */
  check(req: { headers?: Record<string, string | string[] | undefined> }): void {
    if (this.forwardedUntrusted && this.trustEveryHop) return;
    const trust = proxyTrustOf(req);
    if (trust === 'every' && !this.trustEveryHop) {
      this.trustEveryHop = true;
      this.logger.warn(
        "The app trusts every proxy (Express 'trust proxy' / Fastify trustProxy is true): rate limits without a key count each request by the left-most X-Forwarded-For address, which any client can write to get a fresh counter. Trust only your own proxies (their addresses, subnets or number of hops). Reported once per process.",
      );
    }
    if (trust === 'none' && !this.forwardedUntrusted && req.headers?.['x-forwarded-for'] !== undefined) {
      this.forwardedUntrusted = true;
      this.logger.warn(
        "A request with X-Forwarded-For reached an app that trusts no proxy, so rate limits without a key count it by its socket's address: behind a proxy, every client shares the proxy's counter. Tell the app which proxies to trust (Express: app.set('trust proxy', ...); Fastify: trustProxy), or give the module a tracker. Reported once per process.",
      );
    }
  }
}

/** The process's one reporter (the default tracker's). */
export const proxyTrustWarnings = new ProxyTrustWarnings(new Logger('RateLimitGuard'));

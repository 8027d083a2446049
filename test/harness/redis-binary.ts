import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { isDebianRoot, onPath, systemBinary } from './system-package.js';

/**
 * Which server a test runs against: the system's Redis 7; Redis 8.0 / Valkey 8.1 from Debian trixie;
 * Valkey 9.1 / Redis 8.0.6 ('redis8-sid') from Debian unstable.
 */
export type RedisFlavor = 'redis7' | 'redis8' | 'valkey8' | 'valkey9' | 'redis8-sid';
export const FLAVORS: RedisFlavor[] = ['redis7', 'redis8', 'valkey8', 'valkey9', 'redis8-sid'];
/** The flavors whose servers have native hash field expiry (HPEXPIRE, HSETEX). */
export const FIELD_EXPIRY_FLAVORS: RedisFlavor[] = ['redis8', 'valkey9', 'redis8-sid'];

const INSTALL_HINT =
  'redis-server was not found on PATH. Install it first: `apt-get install redis-server` (Debian/Ubuntu), ' +
  '`brew install redis` (macOS), or point the tests at a server you run with REDIS_URL=redis://host:port.';

/** The system redis-server, installed with apt where it is missing on Debian as root. */
function systemRedisServer(): string {
  return systemBinary('redis-server', 'redis-server', INSTALL_HINT);
}

/** A server unpacked from a Debian suite into .cache/ (scripts/fetch-debian-servers.sh). */
function debianServer(flavor: Exclude<RedisFlavor, 'redis7'>): string {
  const [suite, binary] = flavor === 'redis8-sid' ? ['unstable', 'redis8'] : [flavor === 'valkey9' ? 'unstable' : 'trixie', flavor];
  if (!isDebianRoot()) {
    throw new Error(`The ${flavor} test server is unpacked from Debian ${suite} packages, which needs apt-get as root.`);
  }
  const dir = join(process.cwd(), '.cache', 'servers', suite);
  execFileSync('bash', [join(process.cwd(), 'scripts', 'fetch-debian-servers.sh'), suite, dir], { stdio: 'ignore' });
  return join(dir, 'bin', `${binary}-server`);
}

/** redis-cli (Debian's redis-tools, which redis-server depends on): joins test clusters. */
export function redisCli(): string {
  const found = onPath('redis-cli');
  if (found) return found;
  systemRedisServer(); // installs redis-tools with it where it can
  const installed = onPath('redis-cli');
  if (!installed) throw new Error(`redis-cli was not found on PATH. ${INSTALL_HINT}`);
  return installed;
}

const binaries = new Map<RedisFlavor, string>();

/** The redis-server (or valkey-server) executable of `flavor`, fetched or installed on first use. */
export function redisServerBinary(flavor: RedisFlavor = 'redis7'): string {
  let binary = binaries.get(flavor);
  if (!binary) {
    binary = flavor === 'redis7' ? systemRedisServer() : debianServer(flavor);
    binaries.set(flavor, binary);
  }
  return binary;
}

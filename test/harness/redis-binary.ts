import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { isDebianRoot, onPath, systemBinary } from './system-package.js';

/** Which server a test runs against: the system's Redis 7, or Redis 8 / Valkey 8 from Debian trixie. */
export type RedisFlavor = 'redis7' | 'redis8' | 'valkey8';
export const FLAVORS: RedisFlavor[] = ['redis7', 'redis8', 'valkey8'];

const INSTALL_HINT =
  'redis-server was not found on PATH. Install it first: `apt-get install redis-server` (Debian/Ubuntu), ' +
  '`brew install redis` (macOS), or point the tests at a server you run with REDIS_URL=redis://host:port.';

/** The system redis-server, installed with apt where it is missing on Debian as root. */
function systemRedisServer(): string {
  return systemBinary('redis-server', 'redis-server', INSTALL_HINT);
}

/** Redis 8.0 / Valkey 8.1 unpacked from Debian trixie into .cache/ (scripts/fetch-trixie-servers.sh). */
function trixieServer(flavor: 'redis8' | 'valkey8'): string {
  if (!isDebianRoot()) {
    throw new Error(`The ${flavor} test server is unpacked from Debian trixie packages, which needs apt-get as root.`);
  }
  const dir = join(process.cwd(), '.cache', 'servers', 'trixie');
  execFileSync('bash', [join(process.cwd(), 'scripts', 'fetch-trixie-servers.sh'), dir], { stdio: 'ignore' });
  return join(dir, 'bin', `${flavor}-server`);
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
    binary = flavor === 'redis7' ? systemRedisServer() : trixieServer(flavor);
    binaries.set(flavor, binary);
  }
  return binary;
}

import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Which server a test runs against: the system's Redis 7, or Redis 8 / Valkey 8 from Debian trixie. */
export type RedisFlavor = 'redis7' | 'redis8' | 'valkey8';
export const FLAVORS: RedisFlavor[] = ['redis7', 'redis8', 'valkey8'];

const INSTALL_HINT =
  'redis-server was not found on PATH. Install it first: `apt-get install redis-server` (Debian/Ubuntu), ' +
  '`brew install redis` (macOS), or point the tests at a server you run with REDIS_URL=redis://host:port.';

function onPath(name: string): string | undefined {
  const dirs = (process.env['PATH'] ?? '').split(delimiter).concat(['/usr/sbin', '/usr/bin', '/usr/local/bin']);
  for (const dir of dirs) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // keep looking
    }
  }
  return undefined;
}

const isDebianRoot = () => process.platform === 'linux' && process.getuid?.() === 0 && onPath('apt-get') !== undefined;

/**
 * The system redis-server. Where it is missing on Debian as root, installs it with apt (the
 * way a bare CI machine gets it); anywhere else, stops with how to install it.
 */
function systemRedisServer(): string {
  const found = onPath('redis-server');
  if (found) return found;
  if (!isDebianRoot()) throw new Error(INSTALL_HINT);
  const apt = (...args: string[]) =>
    execFileSync('apt-get', ['-o', 'DPkg::Lock::Timeout=300', '-qq', ...args], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  apt('update');
  apt('install', '-y', 'redis-server');
  const installed = onPath('redis-server');
  if (!installed) throw new Error(`apt-get installed redis-server but it is still not on PATH. ${INSTALL_HINT}`);
  return installed;
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

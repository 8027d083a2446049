import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

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

/**
 * The system redis-server. Where it is missing on Debian as root, installs it with apt (the
 * way a bare CI machine gets it); anywhere else, stops with how to install it.
 */
export function redisServerBinary(): string {
  const found = onPath('redis-server');
  if (found) return found;
  const canApt = process.platform === 'linux' && process.getuid?.() === 0 && onPath('apt-get');
  if (!canApt) throw new Error(INSTALL_HINT);
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

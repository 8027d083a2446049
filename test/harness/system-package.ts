import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Where `name` is on PATH (or the usual system directories), if anywhere. */
export function onPath(name: string): string | undefined {
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

export const isDebianRoot = () => process.platform === 'linux' && process.getuid?.() === 0 && onPath('apt-get') !== undefined;

/**
 * The executable `binary` of Debian package `pkg`. Where it is missing on Debian as root, installs
 * the package with apt (the way a bare CI machine gets it; concurrent installs wait for the dpkg
 * lock); anywhere else, stops with `hint`.
 */
export function systemBinary(binary: string, pkg: string, hint: string): string {
  const found = onPath(binary);
  if (found) return found;
  if (!isDebianRoot()) throw new Error(hint);
  const apt = (...args: string[]) =>
    execFileSync('apt-get', ['-o', 'DPkg::Lock::Timeout=300', '-qq', ...args], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  apt('update');
  apt('install', '-y', pkg);
  const installed = onPath(binary);
  if (!installed) throw new Error(`apt-get installed ${pkg} but ${binary} is still not on PATH. ${hint}`);
  return installed;
}

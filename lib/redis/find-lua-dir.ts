import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The package's `lua/` folder, found by walking up from `fromDir`: the source tree (lib/redis)
 * and both builds (dist/esm/redis, dist/cjs/redis) sit at different depths below it. The walk
 * stops at the package's own root, so a stray lua/ further up is never picked.
 */
export function findLuaDir(fromDir: string): string {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'lua');
    if (existsSync(join(candidate, 'rate-limit', 'decide.lua'))) return candidate;
    if (isPackageRoot(dir) || dirname(dir) === dir) {
      throw new Error(`nest-redis-limit: no lua/ folder between ${fromDir} and ${dir}; the package is incomplete`);
    }
  }
}

function isPackageRoot(dir: string): boolean {
  try {
    return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name === 'nest-redis-limit';
  } catch {
    return false;
  }
}

import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The package's `lua/` folder, found by walking up from `fromDir`: the source tree (lib/redis)
 * and both builds (dist/esm/redis, dist/cjs/redis) sit at different depths below it.
 */
export function findLuaDir(fromDir: string): string {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'lua');
    if (existsSync(join(candidate, 'rate-limit', 'decide.lua'))) return candidate;
    if (dirname(dir) === dir) {
      throw new Error(`nest-redis-limit: no lua/ folder above ${fromDir}; the package is incomplete`);
    }
  }
}

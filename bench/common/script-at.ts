import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/** A script as it was at `commit`, includes resolved, from git; undefined where the clone's
 * history does not reach it. For benches that set this commit's scripts beside an earlier one's. */
export function scriptAt(commit: string, file: string): string | undefined {
  const show = (path: string) => execFileSync('git', ['show', `${commit}:lua/${path}`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  const dir = file.slice(0, file.lastIndexOf('/') + 1);
  try {
    return show(file).replace(/^--- @include "([^"]+)"\s*$/gm, (_line, target: string) => show(target.startsWith('../') ? target.slice(3) : `${dir}${target}`));
  } catch {
    return undefined;
  }
}

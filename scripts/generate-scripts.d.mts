// Types of generate-scripts.mjs, for the tests that import it.
import type { ScriptHeader } from './script-headers.mjs';

export interface FreshScript {
  /** Its path below lua/. */
  file: string;
  sha1: string;
  numberOfKeys: number | undefined;
  source: string;
  /** Its header, read by script-headers.mjs. */
  header: ScriptHeader;
}

export const OUTPUTS: { scripts: string; bindings: string; page: string };
/** What to do when the generated modules lag behind lua/ or dashboard-page/. */
export const REGENERATE: string;
export function compileScripts(): FreshScript[];
export function readPage(): { file: string; source: string }[];
/** Each generated module's text, by its path from the package root. */
export function generate(): Record<string, string>;
export function writeGenerated(): string[];

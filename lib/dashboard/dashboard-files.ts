import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { LUA_DIR } from '../redis/lua-dir.js';

/** The page's files, shipped beside lua/ in the package's dashboard-page/ folder. */
const PAGE_DIR = join(dirname(LUA_DIR), 'dashboard-page');

export const PAGE_FILES = {
  'index.html': 'text/html; charset=utf-8',
  'dashboard.css': 'text/css; charset=utf-8',
  'dashboard.js': 'text/javascript; charset=utf-8',
} as const;

export type PageFile = keyof typeof PAGE_FILES;

/** Read once, when the dashboard's module is built: a package without them fails at start-up. */
export function readPageFiles(): Record<PageFile, string> {
  return Object.fromEntries(Object.keys(PAGE_FILES).map((file) => [file, readFileSync(join(PAGE_DIR, file), 'utf8')])) as Record<PageFile, string>;
}

/** No script, style, image or frame from anywhere but the dashboard itself. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'self'; form-action 'none'; frame-ancestors 'none'";

/** The page with its base URL: the files and JSON endpoints it asks for sit under `base`. */
export function pageWithBase(html: string, base: string): string {
  const escaped = base.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return html.replace('<base href="./">', `<base href="${escaped}">`);
}

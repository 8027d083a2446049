import { DASHBOARD_PAGE } from './dashboard-page.generated.js';

/** The page's files (dashboard-page/ in the repository) with their content types. */
export const PAGE_FILES = {
  'index.html': 'text/html; charset=utf-8',
  'dashboard.css': 'text/css; charset=utf-8',
  'dashboard.js': 'text/javascript; charset=utf-8',
  // linked by the page, so a browser does not ask the app for /favicon.ico (a 404 on every load)
  'favicon.svg': 'image/svg+xml',
} as const;

export type PageFile = keyof typeof PAGE_FILES;

/** Compiled in at build time (scripts/generate-scripts.mjs), so a bundled app serves them too. */
export const PAGE_SOURCES: Record<PageFile, string> = DASHBOARD_PAGE;

/** No script, style, image or frame from anywhere but the dashboard itself. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'self'; form-action 'none'; frame-ancestors 'none'";

/** The page with its base URL: the files and JSON endpoints it asks for sit under `base`. */
export function pageWithBase(html: string, base: string): string {
  const escaped = base.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  // a replacer function, not a string: a string's `$&`, `` $` ``, `$'` would splice the page into itself
  return html.replace('<base href="./">', () => `<base href="${escaped}">`);
}

/**
 * The base URL of the page requested at `url`: its path with a trailing slash. The path ends at
 * `?`, and at `;` too: Fastify's `useSemicolonDelimiter` routes `/redis-limit;x` to the page, whose
 * files are not under `/redis-limit;x/`.
 */
export function pageBase(url: string): string {
  const path = /^[^?;#]*/.exec(url)![0];
  return path.endsWith('/') ? path : `${path}/`;
}

type Headers = Record<string, string | string[] | undefined>;

const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/**
 * Whether a request may act on the dashboard's behalf (CSRF): a browser says where a request came
 * from with Sec-Fetch-Site (every current browser) or Origin (older ones, on every POST); either
 * naming another site refuses it. A request with neither comes from no browser (curl, a script),
 * which a forged cross-site request cannot be.
 */
export function isSameOrigin(headers: Headers): boolean {
  const site = first(headers['sec-fetch-site']);
  // 'none' is a request the user typed: no page sent it
  if (site !== undefined) return site === 'same-origin' || site === 'none';
  const origin = first(headers['origin']);
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === first(headers['host']);
  } catch {
    return false; // 'null' (a sandboxed frame, a file) or garbage
  }
}

/** JSON bodies only: a cross-site form cannot send one without a preflight we never answer. */
export function isJson(headers: Headers): boolean {
  return /^application\/json\s*(;|$)/i.test(first(headers['content-type']) ?? '');
}

// Checks of arguments every area shares: how a bad value is described and which error it gets.
// Area-specific checks (keys, limits, queues, hashes) live beside their area and use these.

/** The error for a bad number: a TypeError when `value` is not a number at all, a RangeError
 * when it is one out of range. */
export function numberError(value: unknown): typeof TypeError | typeof RangeError {
  return typeof value === 'number' ? RangeError : TypeError;
}

/** Several problems found at start-up as one error, a line each: a RangeError only when every
 * problem is a number out of range (a RangeError), else a TypeError. */
export function problemsError(heading: string, problems: readonly Error[]): TypeError | RangeError {
  const kind = problems.every((problem) => problem instanceof RangeError) ? RangeError : TypeError;
  return new kind(`${heading}:\n  ${problems.map((problem) => problem.message).join('\n  ')}`);
}

/** A bad value as error messages quote it: strings quoted (cut at 40 characters), numbers, booleans,
 * null and undefined as they are, anything else by its type. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  return typeof value;
}

/** Throws a TypeError or RangeError naming `argument` unless `value` is a positive safe integer. */
export function assertPositiveInteger(value: unknown, argument: string): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new (numberError(value))(`${argument} must be a positive integer, got ${describeValue(value)}`);
  }
}

// A lone surrogate has no UTF-8 form: Redis would store U+FFFD, so two strings could collide.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/u;

/** Throws a TypeError naming `argument` if `text` holds a lone surrogate. Needed wherever a string
 * reaches Redis unescaped (hash fields, set members, script arguments, the key prefix). */
export function assertWellFormed(text: string, argument: string): void {
  if (!isWellFormed(text)) throw new TypeError(`${argument} must be well-formed Unicode (it has a lone surrogate)`);
}

export const isWellFormed = (text: string): boolean => !LONE_SURROGATE.test(text);

/** The longest delay a Node.js timer takes (about 24.8 days); a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2_147_483_647;

/** A timer's length in ms: a positive integer (or one >= 0) no larger than MAX_TIMER_MS. */
export function assertTimerMs(value: unknown, what: 'a positive integer' | 'an integer >= 0', argument: string): asserts value is number {
  const min = what === 'a positive integer' ? 1 : 0;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_TIMER_MS) {
    throw new (numberError(value))(`${argument} must be ${what} (ms) up to ${MAX_TIMER_MS}, got ${describeValue(value)}`);
  }
}

/** Throws a TypeError naming the first property of `options` not in `known`: a misspelt option
 * would otherwise be ignored, and the call would do what was not asked (`peak: true` charges,
 * `timeout` waits for ever). */
export function assertKnownOptions(options: object, known: readonly string[], argument: string): void {
  const unknown = Object.keys(options).find((name) => !known.includes(name));
  if (unknown !== undefined) throw new TypeError(`${argument}.${unknown} is not an option (${known.join(', ')})`);
}

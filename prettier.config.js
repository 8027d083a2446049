// Prettier for the TypeScript, JavaScript and JSON, in the style they were written in.
/** @type {import('prettier').Config} */
export default {
  // the width that changes fewest of today's lines: lines written by hand run long (600 past 140
  // columns), and past 160 Prettier starts joining lines that were broken by hand
  printWidth: 160,
  singleQuote: true,
  trailingComma: 'all',
};

// ESLint over the library, its tests, benchmarks, sample app and scripts: typescript-eslint's
// type-checked recommended rules (each file read with the tsconfig.json nearest to it), plus the
// stricter rules this code already keeps. `npm run lint` runs it beside `prettier --check`.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// lib/'s feature, transport and module files, as import paths from a folder of lib/ see them
const FEATURES = String.raw`(rate-limit|delay-queue|expiring-hash|max-pending|max-concurrent|dashboard|transports)/|redis-limit\.module|index\.js$`;

const MODULE_FILES = 'A feature imports no module file: the module composes the options and wires the features.';

export default defineConfig(
  globalIgnores([
    'dist/',
    'dist-sample/',
    'coverage/',
    '.cache/',
    'bench/.build/',
    // separate npm packages that import the packed library: the compat tests install and run them
    'test/compat/fixtures/',
  ]),
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // kept by the code already, and worth keeping
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/consistent-type-exports': 'error',
      '@typescript-eslint/no-import-type-side-effects': 'error',
      '@typescript-eslint/no-deprecated': 'error',
      '@typescript-eslint/no-unnecessary-type-conversion': 'error',
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      // `_name` is how a parameter or a destructured key is left unused on purpose (as tsc's noUnused*)
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Nest hands out handlers and classes as `Function` (getHandler, getClass): our maps say so too
      '@typescript-eslint/no-unsafe-function-type': 'off',
      // an `async` stand-in without await meets a Promise contract and turns a throw into a rejection
      '@typescript-eslint/require-await': 'off',
      // Nest's HttpStatus is a numeric enum, compared with the plain status codes transports give
      '@typescript-eslint/no-unsafe-enum-comparison': 'off',
      // Not taken from the strict sets: no-non-null-assertion (`!` marks an index read already
      // checked, under noUncheckedIndexedAccess), no-unnecessary-condition (public input is
      // checked at run time for JavaScript callers, whatever its type says), prefer-nullish-
      // coalescing (`||` on strings is deliberate: an empty header or variable means absent).
    },
  },
  {
    // a library logs through Nest's Logger, which the application configures
    files: ['lib/**'],
    rules: { 'no-console': 'error' },
  },
  {
    // the module file and the options it composes sit on top: no feature imports them
    files: ['lib/*/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: String.raw`^(\.\./)+(redis-limit\.|index\.js$)`,
              message: MODULE_FILES,
            },
          ],
        },
      ],
    },
  },
  {
    // layers point down (docs/how-it-works.md, "A maintainer's map"): redis/ is infrastructure and
    // imports no feature; of the rest of lib/ it may use errors.ts and validation.ts, and the types
    // of the options and the events it is handed
    files: ['lib/redis/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: String.raw`^\.\./(${FEATURES})`,
              message: 'redis/ is infrastructure: it imports no feature, transport or module file, not even a type.',
            },
            {
              regex: String.raw`^\.\./(?!errors\.js$|validation\.js$|${FEATURES})`,
              allowTypeImports: true,
              message: 'redis/ is infrastructure: of the rest of lib/ it imports errors.ts and validation.ts at run time, anything else as a type only.',
            },
          ],
        },
      ],
    },
  },
  {
    // transports/ is the guards' common ground, under the features that guard: their types only
    files: ['lib/transports/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: String.raw`^\.\./(redis-limit\.|index\.js$)`, message: MODULE_FILES },
            {
              regex: String.raw`^\.\./(rate-limit|delay-queue|expiring-hash|max-pending|max-concurrent|dashboard)/`,
              allowTypeImports: true,
              message: "transports/ is the guards' common ground: it may name a feature's types, never import its code.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ['test/**', 'bench/**'],
    rules: {
      // tests assert on untyped replies (supertest bodies, JSON.parse, Reflect metadata) right
      // after reading them; bench's alternatives are installed by `npm run bench` only, so in a
      // plain checkout their types are unknown to the linter
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // tests read methods off prototypes to look at their metadata, never to call them
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    // plain JavaScript (scripts, workers, config, the dashboard page) is in no tsconfig
    files: ['**/*.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: globals.node },
  },
  {
    files: ['dashboard-page/**/*.js'],
    languageOptions: { globals: globals.browser },
  },
);

// Jest runs the TypeScript sources as ES modules (Nest 12 is ESM-only): ts-jest with useESM,
// started with NODE_OPTIONS=--experimental-vm-modules (see package.json).
import { existsSync } from 'node:fs';

// Redis 8 and Valkey 8 are unpacked from Debian trixie packages, which takes apt-get as root.
// With REDIS_URL every test talks to that one server, so there is no matrix to run.
const canFetchTrixie = process.platform === 'linux' && process.getuid?.() === 0 && existsSync('/usr/bin/apt-get');
const extraFlavors = process.env.REDIS_URL || !canFetchTrixie ? [] : ['redis8', 'valkey8'];
const common = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
  // The compat fixtures are separate npm packages; keep their package.json names out of the haste map.
  modulePathIgnorePatterns: ['<rootDir>/test/compat/fixtures'],
};

export default {
  // per-project testTimeout is ignored by jest: it belongs here
  testTimeout: 60_000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.spec.ts'] },
    // the integration and e2e suites run on the system's Redis 7, and on Redis 8.0 and Valkey 8.1
    // (Debian trixie builds the harness unpacks) where those can be had
    ...['integration', 'e2e'].flatMap((suite) =>
      ['redis7', ...extraFlavors].map((flavor) => ({
        ...common,
        displayName: flavor === 'redis7' ? suite : `${suite}:${flavor}`,
        testMatch: [`<rootDir>/test/${suite}/**/*.spec.ts`],
        globals: { __REDIS_FLAVOR__: flavor },
      })),
    ),
    {
      ...common,
      displayName: 'compat',
      testMatch: ['<rootDir>/test/compat/**/*.spec.ts'],
      testPathIgnorePatterns: ['/node_modules/', '/fixtures/'],
    },
  ],
};

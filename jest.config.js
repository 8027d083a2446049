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

// Suites about one server's own life (a database index, DEBUG SLEEP, the server's version, a
// standalone restart) have no cluster form; the topology project covers a cluster's outages.
const STANDALONE_ONLY = ['module.spec.ts', 'server-flavor.spec.ts', 'redis-outage.spec.ts'];
// Suites about a command only Redis 8 has (HSETEX): they start Redis 8 servers of their own, so
// they run once, in the Redis 8 project, and nowhere else rather than as skipped tests.
const REDIS8_ONLY = ['expiring-hash-hsetex.spec.ts'];
// Suites about Nest's wiring rather than the server (which guard reaches which transport, on
// which set-up): they run on the system's Redis 7 only.
const REDIS7_ONLY = ['every-setup.spec.ts'];
const ignored = (files) => ['/node_modules/', ...files.map((file) => `/${file.replace(/\./g, '\\.')}$`)];

// Every script runs on Redis 8 and Valkey 8 in the integration suites. Over HTTP, those servers add
// only what differs there: their own outages and restarts, and on Redis 8 the native field expiry
// behind @MaxPending and expiry notifications. The other e2e suites run on Redis 7 and the cluster
// (npm test stays well inside its 15 minutes).
const E2E_BY_FLAVOR = {
  redis8: ['redis-outage', 'orders', 'orders-dead-letters', 'observability', 'graphql', 'microservices', 'ws-gateway'],
  valkey8: ['redis-outage', 'orders'],
};

function clusterProjects(suite) {
  if (process.env.REDIS_URL) return [];
  return [
    {
      ...common,
      displayName: `${suite}:cluster`,
      testMatch: [`<rootDir>/test/${suite}/**/*.spec.ts`],
      testPathIgnorePatterns: ignored([...STANDALONE_ONLY, ...REDIS8_ONLY, ...REDIS7_ONLY]),
      globals: { __REDIS_FLAVOR__: 'redis7', __REDIS_TOPOLOGY__: 'cluster' },
    },
  ];
}

export default {
  // per-project testTimeout is ignored by jest: it belongs here
  testTimeout: 60_000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.spec.ts'] },
    // the integration suites run on the system's Redis 7, on Redis 8.0 and Valkey 8.1 (Debian
    // trixie builds the harness unpacks) where those can be had, and on a 3-master Redis Cluster of
    // the system's Redis 7; the e2e suites on Redis 7 and the cluster, and some on 8.0 and 8.1
    ...['integration', 'e2e'].flatMap((suite) => [
      ...['redis7', ...extraFlavors].map((flavor) => ({
        ...common,
        displayName: flavor === 'redis7' ? suite : `${suite}:${flavor}`,
        testMatch:
          suite === 'e2e' && flavor !== 'redis7'
            ? E2E_BY_FLAVOR[flavor].map((name) => `<rootDir>/test/e2e/${name}.spec.ts`)
            : [`<rootDir>/test/${suite}/**/*.spec.ts`],
        testPathIgnorePatterns: flavor === 'redis8' ? ['/node_modules/'] : ignored(REDIS8_ONLY),
        // on the system's Redis 7, modules connect as a least-privilege ACL user (see aclRules)
        globals: { __REDIS_FLAVOR__: flavor, __REDIS_ACL__: flavor === 'redis7' },
      })),
      ...clusterProjects(suite),
    ]),
    // cluster and sentinel only: spread over masters, hostile hash tags, failovers
    ...(process.env.REDIS_URL ? [] : [{ ...common, displayName: 'topology', testMatch: ['<rootDir>/test/topology/**/*.spec.ts'] }]),
    // the dashboard in Debian's headless Chromium, on the system's Redis 7 only: it is about the page
    // (and its chart's keys once on a cluster, which REDIS_URL leaves out as it does every cluster)
    {
      ...common,
      displayName: 'browser',
      testMatch: ['<rootDir>/test/browser/**/*.spec.ts'],
      testPathIgnorePatterns: ['/node_modules/', ...(process.env.REDIS_URL ? ['/dashboard-cluster\\.spec\\.ts$'] : [])],
    },
    // the sample app bundled by esbuild into one file and run where no node_modules, lua/ or
    // dashboard-page/ can be found: the library must carry its scripts and page
    { ...common, displayName: 'bundle', testMatch: ['<rootDir>/test/bundle/**/*.spec.ts'] },
    {
      ...common,
      displayName: 'compat',
      testMatch: ['<rootDir>/test/compat/**/*.spec.ts'],
      testPathIgnorePatterns: ['/node_modules/', '/fixtures/'],
    },
  ],
};

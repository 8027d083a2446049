// Jest runs the TypeScript sources as ES modules (Nest 12 is ESM-only): ts-jest with useESM,
// started with NODE_OPTIONS=--experimental-vm-modules (see package.json).
import { existsSync } from 'node:fs';

// Redis 8.0 and Valkey 8.1 are unpacked from Debian trixie packages, Valkey 9.1 and Redis 8.0.6
// from Debian unstable, which takes apt-get as root. With REDIS_URL every test talks to that one
// server, so there is no matrix to run.
const canFetchDebian = process.platform === 'linux' && process.getuid?.() === 0 && existsSync('/usr/bin/apt-get');
const extraFlavors = process.env.REDIS_URL || !canFetchDebian ? [] : ['redis8', 'valkey8', 'valkey9', 'redis8-sid'];
const common = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
  // The compat fixtures are separate npm packages; keep their package.json names out of the haste map.
  modulePathIgnorePatterns: ['<rootDir>/test/compat/fixtures'],
};

// Suites about one server's own life (a database index, DEBUG SLEEP or SET-ACTIVE-EXPIRE, the server's version, a
// standalone restart, one server's ACL users, a subscriber that subscribes again itself) have no
// cluster form; the topology project covers a cluster's outages.
const STANDALONE_ONLY = [
  'module.spec.ts',
  'reply-lost.spec.ts',
  'server-flavor.spec.ts',
  'redis-outage.spec.ts',
  'least-privilege.spec.ts',
  'subscriber-reconnect.spec.ts',
  'expiring-hash-reclaim.spec.ts',
];
// Suites about what an app process does when it dies, falls back to local limits or runs on a
// skewed clock: Node's side of it does not depend on where keys live, and the scripts they call run
// on the cluster in their families' own suites (expiring-hash-notify; outcomes, for the penalty a
// hand-over charges; algorithms, on the server's clock).
const PROCESS_LIFE = ['expiring-hash-kill.spec.ts', 'local-hand-over.spec.ts', 'local-fail-mode.spec.ts', 'clock-skew.spec.ts'];
// Suites whose every operation stays in one hash slot (one key, or a queue's keys under its tag)
// and whose subject is Node's side of it: timing, leases, retries, waiting, concurrency in the
// process. A cluster runs their scripts in the families' own suites (rate-limit-model, algorithms,
// delay-queue, delay-queue-model) and their wake-ups in topology/; here it would repeat them.
const ONE_SLOT = [
  'concurrency.spec.ts',
  'acquire.spec.ts',
  'shadow-decision.spec.ts',
  'delay-queue-rate-limit.spec.ts',
  'delay-queue-retries.spec.ts',
  'delay-queue-outcomes.spec.ts',
  'delay-queue-leases.spec.ts',
  'delay-queue-concurrency-per-key.spec.ts',
  'delay-queue-adaptive.spec.ts',
  'delay-queue-deadlines.spec.ts',
];
// Suites that start servers of their own, so they run in one project each rather than as skipped
// tests: a command only Redis 8 and Valkey 9 have (HSETEX) runs in their projects; a move between
// Redis 8 and the system's Redis 7 in the Redis 8 project.
const FIELD_EXPIRY_ONLY = ['expiring-hash-hsetex.spec.ts'];
// forTesting()'s own clock and options: no server is involved, so only the in-memory project runs it.
const MEMORY_ONLY = ['for-testing.spec.ts'];
const REDIS8_ONLY = ['expiring-hash-capability-change.spec.ts'];
// Suites about Nest's wiring rather than the server (which guard reaches which transport, on
// which set-up, what start-up refuses, what bad input meets before Redis is asked): they run on
// the system's Redis 7 only.
const REDIS7_ONLY = [
  'every-setup.spec.ts',
  'decorator-validation.spec.ts',
  'guard-rules.spec.ts',
  'discovery.spec.ts',
  'default-limits.spec.ts',
  'bad-input.spec.ts',
  'user-function-failures.spec.ts',
  'client-ip.spec.ts',
  'proxy-warnings-express.spec.ts',
  'proxy-warnings-fastify.spec.ts',
  'draft-headers.spec.ts',
  'max-pending-options.spec.ts',
  'user-tiers.spec.ts',
  'health-indicator.spec.ts',
  'telemetry.spec.ts',
  // forTesting()'s engine against the system's Redis, command by command
  'memory-commands.spec.ts',
];
// Every integration suite runs on the system's Redis 7 (as a least-privilege ACL user) and, but for
// the lists above, on the cluster. Every other server runs the suites where the server shows
// through: every script on random sequences against its model, and script loading and errors.
// Valkey 9.1, the newest server of another lineage, adds each script family's own suite; Redis 8.0
// and Valkey 9.1 add what their native field expiry changes (the expiring hash's modes, fields not
// yet reclaimed, notifications, sweeps and @MaxPending). The rest would repeat Redis 7's run there,
// while npm test must stay inside 15 minutes.
const MODEL_SUITES = ['server-flavor', 'scripts', 'rate-limit-model', 'delay-queue-model', 'expiring-hash-model'];
const SCRIPT_FAMILY_SUITES = [
  'algorithms',
  'stacked',
  'refund',
  'outcomes',
  'delay-queue',
  'delay-queue-dead',
  'delay-queue-schedules',
  'queue-inspection',
  'expiring-hash',
];
// What native field expiry changes: HSETEX, fields the server has not reclaimed, the expiring
// hash's modes, notifications, sweeps and idle timers, and @MaxPending on them.
const NATIVE_EXPIRY_SUITES = [
  ...FIELD_EXPIRY_ONLY.map((file) => file.replace('.spec.ts', '')),
  'expiring-hash',
  'expiring-hash-reclaim',
  'expiring-hash-notify',
  'expiring-hash-sweep',
  'expiring-hash-idle',
  'max-pending-guard',
];
const INTEGRATION_BY_FLAVOR = {
  // and what a process's death does to native field expiries (Node's side: once is enough)
  redis8: [...MODEL_SUITES, ...REDIS8_ONLY.map((file) => file.replace('.spec.ts', '')), ...NATIVE_EXPIRY_SUITES, 'expiring-hash-kill'],
  valkey8: MODEL_SUITES,
  valkey9: [...new Set([...MODEL_SUITES, ...SCRIPT_FAMILY_SUITES, ...NATIVE_EXPIRY_SUITES])],
  'redis8-sid': MODEL_SUITES,
};
// The semantics on forTesting()'s in-memory engine (the same Lua, in this process): every script
// family's model and own suite, and the features over them, as on a server. Suites about a
// server's life, its protocol, ACLs, outages or clusters have no in-memory form.
const MEMORY_SUITES = [
  'rate-limit-model',
  'delay-queue-model',
  'expiring-hash-model',
  ...SCRIPT_FAMILY_SUITES,
  'grant-ids',
  'explain-limit',
  'overrides',
  'keyed-overrides',
  'reset-limit',
  'max-pending-guard',
  'max-concurrent',
  'expiring-hash-notify',
  'expiring-hash-sweep',
  'delay-queue-retries',
  'delay-queue-outcomes',
  'delay-queue-rate-limit',
  'delay-queue-concurrency-per-key',
  'decision-batch',
  'slot-batch',
  'concurrency',
  'acquire',
];
const ignored = (files) => ['/node_modules/', ...files.map((file) => `/${file.replace(/\./g, '\\.')}$`)];

// Over HTTP, the other servers add only what differs there: their own outages and restarts, and on
// Redis 8 the native field expiry behind @MaxPending and expiry notifications (the orders routes);
// which transport carries a request does not depend on the server. The cluster adds
// what spreads one request's keys over its masters: stacked limits, outcome-aware refunds, app-wide
// defaults, @MaxPending and the delay queue behind the sample's routes. Every e2e suite runs on
// Redis 7.
const E2E_BY_FLAVOR = {
  redis8: ['redis-outage', 'orders', 'orders-dead-letters', 'observability'],
  // orders: Valkey 8 takes Redis 7's path (no native field expiry), which the default run covers;
  // an outage looks the same from every server (a closed socket, a silent one): Redis 8 covers a
  // restart with field expiries to keep
  valkey8: [],
  // Valkey 9's field expiry behind @MaxPending is Redis 8's over HTTP: integration:valkey9 runs the
  // guard and the notifications on it
  valkey9: [],
  'redis8-sid': [],
  // where a route's keys span slots or a feature crosses the queue; a funnel's or a default's key is
  // one slot, which integration:cluster covers
  cluster: ['quotes-limit', 'stacked-limits', 'count-if', 'orders', 'orders-dead-letters', 'sms-outbox'],
};
const BY_FLAVOR = { integration: INTEGRATION_BY_FLAVOR, e2e: E2E_BY_FLAVOR };
/** The suites of `suite` that `flavor` runs (Redis 7 runs them all). */
const testMatchOf = (suite, flavor) =>
  flavor === 'redis7' ? [`<rootDir>/test/${suite}/**/*.spec.ts`] : BY_FLAVOR[suite][flavor].map((name) => `<rootDir>/test/${suite}/${name}.spec.ts`);

function clusterProjects(suite) {
  if (process.env.REDIS_URL) return [];
  return [
    {
      ...common,
      displayName: `${suite}:cluster`,
      testMatch: suite === 'e2e' ? testMatchOf(suite, 'cluster') : testMatchOf(suite, 'redis7'),
      testPathIgnorePatterns: ignored([...STANDALONE_ONLY, ...PROCESS_LIFE, ...ONE_SLOT, ...FIELD_EXPIRY_ONLY, ...REDIS8_ONLY, ...REDIS7_ONLY, ...MEMORY_ONLY]),
      globals: { __REDIS_FLAVOR__: 'redis7', __REDIS_TOPOLOGY__: 'cluster' },
    },
  ];
}

export default {
  // per-project testTimeout is ignored by jest: it belongs here. It only ends a hung test, so it is
  // generous: a busy machine (CI beside other work) takes two or three times a quiet one's time, and
  // a test that waits for something polls against deadlines of its own
  testTimeout: 120_000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.spec.ts'] },
    // every integration and e2e suite runs on the system's Redis 7; those lists above pick what
    // also runs on Redis 8.0, Valkey 8.1, Valkey 9.1 and Redis 8.0.6 (Debian builds the harness
    // unpacks, where those can be had) and on a 3-master Redis Cluster of the system's Redis 7
    ...['integration', 'e2e'].flatMap((suite) => [
      ...['redis7', ...extraFlavors.filter((flavor) => BY_FLAVOR[suite][flavor].length > 0)].map((flavor) => ({
        ...common,
        displayName: flavor === 'redis7' ? suite : `${suite}:${flavor}`,
        testMatch: testMatchOf(suite, flavor),
        testPathIgnorePatterns: flavor === 'redis7' ? ignored([...FIELD_EXPIRY_ONLY, ...REDIS8_ONLY, ...MEMORY_ONLY]) : ['/node_modules/'],
        // on the system's Redis 7, modules connect as a least-privilege ACL user (see aclRules)
        globals: { __REDIS_FLAVOR__: flavor, __REDIS_ACL__: flavor === 'redis7' },
      })),
      ...clusterProjects(suite),
    ]),
    {
      ...common,
      displayName: 'integration:memory',
      testMatch: [...MEMORY_SUITES, 'for-testing'].map((name) => `<rootDir>/test/integration/${name}.spec.ts`),
      globals: { __REDIS_FLAVOR__: 'redis7', __REDIS_TOPOLOGY__: 'memory' },
    },
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

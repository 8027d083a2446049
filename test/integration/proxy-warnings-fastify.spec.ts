import { proxyWarningsSuite } from '../harness/proxy-warnings-suite.js';

// Express's twin is proxy-warnings-express.spec.ts: each warning is once per process.
proxyWarningsSuite('fastify');

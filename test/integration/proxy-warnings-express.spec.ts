import { proxyWarningsSuite } from '../harness/proxy-warnings-suite.js';

// Fastify's twin is proxy-warnings-fastify.spec.ts: each warning is once per process.
proxyWarningsSuite('express');

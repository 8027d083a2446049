import { jest } from '@jest/globals';
import { createRequire } from 'node:module';

// mercurius requires @fastify/static, which requires content-disposition 3, an ES module: Node
// loads that (require(esm)), Jest's module loader cannot. It only serves GraphiQL's files, which
// no test asks for: the CommonJS content-disposition 2 Express uses stands in.
const require = createRequire(import.meta.url);
const esmOnly = require.resolve('content-disposition', { paths: [require.resolve('@fastify/static')] });
jest.doMock(esmOnly, () => require('content-disposition'));

/** @nestjs/mercurius' driver, loadable under Jest. */
export const { MercuriusDriver } = await import('@nestjs/mercurius');

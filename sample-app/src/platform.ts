/** The HTTP platform the sample app runs on; `npm start` uses Express, the tests both. */
export type Platform = 'express' | 'fastify';

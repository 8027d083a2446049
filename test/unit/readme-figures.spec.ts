import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LEASE_MS, SWEEP_BUDGET } from '../../lib/expiring-hash/sweeper.js';
import { resolveOptions } from '../../lib/redis-limit.options.js';

// Figures the README and its docs/ pages state about the code, read from them and compared with the
// code's own constants, so that neither changes without the other (issue 13 #13: both had drifted).
const docs = readdirSync(join(process.cwd(), 'docs'))
  .filter((file) => file.endsWith('.md'))
  .map((file) => join('docs', file));
const readme = ['README.md', ...docs].map((file) => readFileSync(join(process.cwd(), file), 'utf8')).join('\n');

/** The one number `pattern` captures in the README (commas allowed); fails when it is not there once. */
function figure(pattern: RegExp): number {
  const found = [...readme.matchAll(new RegExp(pattern, 'g'))];
  expect(found).toHaveLength(1);
  return Number(found[0]![1]!.replace(/,/g, ''));
}

describe('documented figures agree with the code', () => {
  it("the sweeper's budget per script call, its lease and the registry's shards", () => {
    expect(figure(/removes their\s+expired fields, at most ~?([\d,]+) (?:fields )?per script call/)).toBe(SWEEP_BUDGET);
    expect(figure(/a sweeper that dies holding one delays those hashes by ([\d,]+) s\b/) * 1000).toBe(LEASE_MS);
    expect(figure(/a registry of sorted sets \(([\d,]+) shards/)).toBe(resolveOptions({}).expiringHash.sweepShards);
  });

  it("the default tracker's IPv6 prefix", () => {
    expect(figure(/\| `ipv6Subnet` \| `(\d+)` \|/)).toBe(resolveOptions({}).ipv6Subnet);
  });

  it("the orders example's pay answers 200 in the README and in the sample app", () => {
    const pay = /@Post\(':id\/pay'\)\s*\n\s*(@HttpCode\([^)]*\))?/;
    const controller = readFileSync(join(process.cwd(), 'sample-app/src/orders/orders.controller.ts'), 'utf8');
    expect(readme.match(pay)?.[1]).toBe('@HttpCode(HttpStatus.OK)');
    expect(controller.match(pay)?.[1]).toBe('@HttpCode(HttpStatus.OK)');
    expect(readme).toMatch(/curl -i -X POST localhost:3000\/orders\/<id>\/pay .*# 200; again: 404/);
  });
});

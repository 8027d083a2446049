import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import 'reflect-metadata';
import { Test } from '@nestjs/testing';
import { Redis, type RedisOptions } from 'ioredis';
import {
  aclRules,
  DelayQueueService,
  ExpiringHashService,
  RateLimiterService,
  RedisLimitModule,
  type ExpiredField,
  type RedisLimitModuleOptions,
} from '../../lib/index.js';
import { redisHealth } from '../../lib/dashboard/redis-health.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { commandCalls, eventually, EXPIRY_MODES } from '../harness/expiring-hash.js';
import { awayFromWindowEnd, DAY_MS } from '../harness/fixed-windows.js';
import { TEST_COMMAND_TIMEOUT_MS } from '../harness/limiter-app.js';
import { freePort, RedisNode } from '../harness/redis-server.js';

const USER = 'limiter';
const PASSWORD = 'limiter-secret';

async function boot(redis: RedisLimitModuleOptions['redis'], options: RedisLimitModuleOptions = {}) {
  // the tests' generous deadline: what is under test is what the server allows, not how fast
  const moduleRef = await Test.createTestingModule({
    imports: [RedisLimitModule.forRoot({ redis, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS, ...options })],
  }).compile();
  await moduleRef.init();
  return moduleRef;
}

/** Every feature once, through `redis`: rate limits, a stack, ExpiringHash with a notification, DelayQueue. */
async function exerciseEverything(redis: RedisLimitModuleOptions['redis'], keyPrefix: string) {
  const moduleRef = await boot(redis, { keyPrefix, expiringHash: { mode: EXPIRY_MODES[0], sweepIntervalMs: 50 } });
  try {
    const limiter = moduleRef.get(RateLimiterService);
    // a day's windows on the server clock: no fixed window ends between a grant and its refusal
    await awayFromWindowEnd(DAY_MS);
    for (const algorithm of ['fixed-window', 'sliding-window', 'sliding-window-counter', 'token-bucket'] as const) {
      // a first grant, a second (written differently: a counter's first write makes it), a refusal
      const policy = { limit: 2, windowMs: DAY_MS, algorithm };
      expect((await limiter.consume('u', policy)).allowed).toBe(true);
      expect((await limiter.consume('u', policy)).allowed).toBe(true);
      expect((await limiter.consume('u', policy)).allowed).toBe(false);
      await limiter.reset('u', policy);
      expect((await limiter.peek('u', policy)).remaining).toBe(2);
    }
    expect((await limiter.funnel('u', { capacity: 2, leakingDurationMs: 1000 })).allowed).toBe(true);
    const stack = await limiter.decide([
      { key: 'u', scope: 'a', policy: { limit: 5, windowMs: 1000 } },
      { key: 'u', scope: 'b', funnel: { capacity: 5, leakingDurationMs: 1000 } },
    ]);
    expect(stack.allowed).toBe(true);

    const hash = moduleRef.get(ExpiringHashService);
    const queues = moduleRef.get(DelayQueueService);
    const expired: ExpiredField[] = [];
    const delivered: unknown[] = [];
    const consumers = [
      queues.consume<ExpiredField>('expired', ({ payload }) => void expired.push(payload)),
      queues.consume(
        'jobs',
        async ({ payload, attempt }) => {
          if (attempt === 1) throw new Error('once');
          delivered.push(payload);
        },
        { backoffMs: 10 },
      ),
    ];
    expect((await hash.setIfBelow('h', 'slot', 'v', 60_000, 3)).accepted).toBe(true);
    await hash.set('h', 'short', 'gone', 100, { notify: 'expired' });
    await hash.expire('h', 'slot', 120_000);
    await hash.update('h', 'slot', 'v2');
    expect(await hash.get('h', 'slot')).toBe('v2');
    expect(await hash.getAll('h')).toMatchObject({ slot: 'v2' }); // 'short' may be gone already
    await hash.delete('h', 'nothing');
    await queues.enqueue('jobs', { n: 1 }, { id: 'j1', delayMs: 50 });
    await queues.enqueue('jobs', { n: 2 }, { id: 'j2', delayMs: 60_000 });
    expect(await queues.reschedule('jobs', 'j2', { delayMs: 60_000 })).toBe(true);
    expect(await queues.cancel('jobs', 'j2')).toBe(true);
    await eventually(async () => expired.length === 1 && delivered.length === 1 && (await hash.count('h')) === 1);
    expect(expired).toEqual([{ key: 'h', field: 'short', value: 'gone' }]);
    expect(await queues.size('jobs')).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
    // dead letters: listed, retried, purged; the queue registry
    const doomed = queues.consume('doomed', () => Promise.reject(new Error('no')), { maxAttempts: 1 });
    await queues.enqueue('doomed', 1, { id: 'd1' });
    await eventually(async () => (await queues.size('doomed')).dead === 1);
    await doomed.stop();
    const { messages, cursor } = await queues.dead('doomed', { limit: 1 });
    expect([messages.map((m) => m.id), cursor]).toEqual([['d1'], null]);
    expect(await queues.dead('doomed', { cursor: Buffer.from(`${messages[0]!.diedAt}:d1`).toString('base64url') })).toEqual({ messages: [], cursor: null });
    expect(await queues.retryDead('doomed')).toBe(1);
    expect(await queues.queues()).toContain('doomed');
    expect(await queues.purgeDead('doomed', ['d1'])).toBe(0);
    expect(await queues.purgeDead('doomed')).toBe(0);
    // the dashboard's health line: INFO and a PING's latency
    expect(await redisHealth(moduleRef.get(RedisConnection))).toEqual(expect.not.objectContaining({ error: expect.anything() }));
    await sleep(200); // a sweep round or two
    await Promise.all(consumers.map((c) => c.stop()));
  } finally {
    await moduleRef.close();
  }
}

describe('a least-privilege ACL user (aclRules)', () => {
  let server: RedisNode;
  let admin: Redis;
  const rules = aclRules({ keyPrefix: 'app:', fieldExpiry: EXPIRY_MODES.includes('native') });
  beforeAll(async () => {
    server = await RedisNode.start({ own: true, args: ['--user', USER, 'on', `>${PASSWORD}`, ...rules] });
    admin = server.client();
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });

  it('runs every feature with only the rules aclRules gives, and no command is refused', async () => {
    await admin.call('ACL', 'LOG', 'RESET');
    await exerciseEverything(`redis://${USER}:${PASSWORD}@${server.host}:${server.port}`, 'app:');
    // ioredis labels its connections with CLIENT SETINFO (Redis >= 7.2) and shrugs off a refusal
    const refused = ((await admin.call('ACL', 'LOG')) as unknown[][]).map((entry) => entry[entry.indexOf('object') + 1]);
    expect(refused.filter((command) => command !== 'client|setinfo')).toEqual([]);
    expect((await admin.keys('*')).every((key) => key.startsWith('app:'))).toBe(true);
  });

  it('reaches nothing outside its prefix: another prefix is refused, and named in the error', async () => {
    const moduleRef = await boot(`redis://${USER}:${PASSWORD}@${server.host}:${server.port}`, { keyPrefix: 'other:' });
    try {
      const attempt = moduleRef.get(RateLimiterService).consume('u', { limit: 1, windowMs: 1000 });
      await expect(attempt).rejects.toMatchObject({ code: 'SCRIPT_ERROR', message: expect.stringMatching(/NOPERM/) });
      expect(await admin.keys('other:*')).toEqual([]);
    } finally {
      await moduleRef.close();
    }
  });

  it('honours the database a URL names (issue 13 #8: SELECT was refused, and db 0 written)', async () => {
    await admin.call('ACL', 'LOG', 'RESET');
    const moduleRef = await boot(`redis://${USER}:${PASSWORD}@${server.host}:${server.port}/2`, { keyPrefix: 'app:db2:' });
    const db2 = server.client();
    try {
      expect((await moduleRef.get(RateLimiterService).consume('u', { limit: 1, windowMs: 60_000 })).allowed).toBe(true);
      await moduleRef.get(ExpiringHashService).set('h', 'f', 'v', 60_000);
      await db2.select(2);
      expect(await admin.keys('app:db2:*')).toEqual([]);
      expect((await db2.keys('app:db2:*')).length).toBeGreaterThanOrEqual(2);
      const refused = ((await admin.call('ACL', 'LOG')) as unknown[][]).map((entry) => entry[entry.indexOf('object') + 1]);
      expect(refused.filter((command) => command !== 'client|setinfo')).toEqual([]);
    } finally {
      db2.disconnect();
      await moduleRef.close();
    }
  });

  it('fails app.init() when the server refuses to SELECT the database the URL names', async () => {
    await admin.call('ACL', 'SETUSER', 'no-select', 'on', `>${PASSWORD}`, ...rules, '-select');
    const booting = boot(`redis://no-select:${PASSWORD}@${server.host}:${server.port}/2`, { keyPrefix: 'app:' });
    await expect(booting).rejects.toThrow(/^RedisLimitModule: SELECT 2 was refused \(NOPERM.*\): .*database 0/);
  });

  it('escapes glob characters in the prefix and grants field expiry and HSETEX only when asked', () => {
    expect(aclRules({ keyPrefix: 'a*b?[c]:' })).toEqual(expect.arrayContaining(['~a\\*b\\?\\[c\\]:*', '&a\\*b\\?\\[c\\]:*']));
    expect(aclRules()).toEqual(expect.arrayContaining(['resetkeys', '~rl:*', 'resetchannels', '&rl:*', '-@all', '+evalsha']));
    expect(aclRules()).not.toContain('+hpexpireat');
    expect(aclRules({ fieldExpiry: true })).toContain('+hpexpireat');
    expect(aclRules({ fieldExpiry: true })).not.toContain('+hsetex');
    expect(aclRules({ fieldExpiry: true, hsetex: true })).toEqual(expect.arrayContaining(['+hpexpireat', '+hsetex']));
    expect(aclRules({ fieldExpiry: true, hsetex: true })).not.toContain('+hgetex'); // nothing sends it
    expect(() => aclRules({ keyPrefix: '' })).toThrow(new TypeError('keyPrefix must be a non-empty string, got ""'));
    expect(() => aclRules({ fieldExpiry: true, hsetex: 'yes' as never })).toThrow(new TypeError('hsetex must be a boolean, got "yes"'));
    expect(() => aclRules({ hsetex: true })).toThrow(new TypeError('hsetex: true needs fieldExpiry: true (HSETEX serves ExpiringHash native mode only)'));
  });

  // Redis 8 has HSETEX; a user must be granted it to use it, and works without the grant
  // (only where the server has native field expiry: Redis 8; a test per server that can show it)
  if (EXPIRY_MODES.includes('native'))
    it('native writes use HSETEX only with the hsetex grant, and fall back without it', async () => {
      const writes: Record<string, number>[] = [];
      for (const [name, hsetex] of [
        ['no-hsetex', false],
        ['hsetex', true],
      ] as const) {
        await admin.call('ACL', 'SETUSER', name, 'on', `>${PASSWORD}`, ...aclRules({ keyPrefix: 'app:', fieldExpiry: true, hsetex }));
        await admin.call('ACL', 'LOG', 'RESET');
        await admin.config('RESETSTAT');
        const moduleRef = await boot(`redis://${name}:${PASSWORD}@${server.host}:${server.port}`, {
          keyPrefix: `app:${name}:`,
          expiringHash: { mode: 'native', sweepIntervalMs: 0 },
        });
        try {
          const hash = moduleRef.get(ExpiringHashService);
          await hash.set('h', 'a', 'v', 60_000);
          // b expires first: the meta field changes (and is written with the hash's expiry) twice
          expect(await hash.setIfBelow('h', 'b', 'v', 30_000, 3)).toEqual({ accepted: true, count: 2 });
          expect(await hash.update('h', 'b', 'w')).toBe(true);
          expect(await hash.getAll('h')).toEqual({ a: 'v', b: 'w' });
        } finally {
          await moduleRef.close();
        }
        const refused = ((await admin.call('ACL', 'LOG')) as unknown[][]).map((entry) => entry[entry.indexOf('object') + 1]);
        expect(refused.filter((command) => command !== 'client|setinfo')).toEqual([]);
        const stats = await admin.info('commandstats');
        writes.push({ hsetex: commandCalls(stats, 'hsetex'), hpexpireat: commandCalls(stats, 'hpexpireat') });
      }
      expect(writes).toEqual([
        { hsetex: 0, hpexpireat: 5 },
        { hsetex: 5, hpexpireat: 0 },
      ]);
    });
});

describe('password and TLS', () => {
  let dir: string;
  let server: RedisNode;
  let tlsPort: number;
  let ca: Buffer;
  beforeAll(async () => {
    // a throwaway CA and a certificate for 127.0.0.1 it signed, made with openssl as a deployment would
    dir = mkdtempSync(join(tmpdir(), 'nrl-tls-'));
    const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
    writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=nrl test CA', '-keyout', 'ca.key', '-out', 'ca.crt');
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', 'server.key', '-out', 'server.csr');
    openssl(
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      'san.ext',
      '-out',
      'server.crt',
    );
    ca = readFileSync(join(dir, 'ca.crt'));
    tlsPort = await freePort();
    const tls = ['--tls-port', String(tlsPort), '--tls-cert-file', join(dir, 'server.crt'), '--tls-key-file', join(dir, 'server.key')];
    tls.push('--tls-ca-cert-file', join(dir, 'ca.crt'), '--tls-auth-clients', 'no');
    server = await RedisNode.start({ own: true, args: ['--requirepass', PASSWORD, ...tls] });
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a password in the URL works; a wrong one leaves the module up, answering per failMode', async () => {
    const good = await boot(`redis://:${PASSWORD}@${server.host}:${server.port}`, { keyPrefix: 'pw:' });
    const bad = await boot(`redis://:wrong@${server.host}:${server.port}`, { keyPrefix: 'pw:', commandTimeoutMs: 300 });
    try {
      expect((await good.get(RateLimiterService).consume('u', { limit: 1, windowMs: 1000 })).allowed).toBe(true);
      await expect(bad.get(RateLimiterService).consume('u', { limit: 1, windowMs: 1000 })).rejects.toMatchObject({
        code: expect.stringMatching(/^REDIS_(UNAVAILABLE|TIMEOUT)$/),
      });
    } finally {
      await good.close();
      await bad.close();
    }
  });

  it('runs every feature over TLS, verifying the server against its CA', async () => {
    const options: RedisOptions = { host: '127.0.0.1', port: tlsPort, password: PASSWORD, tls: { ca } };
    await exerciseEverything(options, 'tls:');
    // a rediss:// URL on a client the app builds and owns
    const owned = new Redis(`rediss://:${PASSWORD}@127.0.0.1:${tlsPort}`, { tls: { ca } });
    const moduleRef = await boot(owned, { keyPrefix: 'tls-url:' });
    try {
      expect((await moduleRef.get(RateLimiterService).consume('u', { limit: 1, windowMs: 1000 })).allowed).toBe(true);
    } finally {
      await moduleRef.close();
      owned.disconnect();
    }
  });

  it('refuses a server whose certificate it cannot verify: the module stays up, answering per failMode', async () => {
    const moduleRef = await boot(`rediss://:${PASSWORD}@127.0.0.1:${tlsPort}`, { keyPrefix: 'untrusted:', commandTimeoutMs: 300 });
    try {
      await expect(moduleRef.get(RateLimiterService).consume('u', { limit: 1, windowMs: 1000 })).rejects.toMatchObject({
        code: expect.stringMatching(/^REDIS_(UNAVAILABLE|TIMEOUT)$/),
      });
    } finally {
      await moduleRef.close();
    }
  });
});

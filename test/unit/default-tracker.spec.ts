import { BadRequestException, type ExecutionContext } from '@nestjs/common';
import { defaultTracker } from '../../lib/index.js';
import { defaultKey } from '../../lib/transports/transport.adapter.js';

// A request without a client address is refused (a 400 in each transport's words), never counted
// under one key that every such request would share.
describe('the default tracker without a client address', () => {
  const keyOf = (ctx: object) => defaultKey(ctx as ExecutionContext, { tracker: undefined, ipv6Subnet: 56 });
  const http = (req: object) => keyOf({ getType: () => 'http', switchToHttp: () => ({ getRequest: () => req }) });
  const gateway = (client: unknown) => keyOf({ getType: () => 'ws', switchToWs: () => ({ getClient: () => client }) });

  it.each([{}, { ip: undefined, socket: {} }, { ip: '', socket: { remoteAddress: '' } }, { ip: ' ' }])('HTTP %p: BadRequestException', (req) => {
    expect(() => http(req)).toThrow(BadRequestException);
  });

  it("HTTP: the socket stands in for a request without `ip` (Node's own, under graphql-ws)", () => {
    expect(http({ socket: { remoteAddress: '::ffff:203.0.113.7' } })).toBe('203.0.113.7');
  });

  it.each([{ _socket: null }, { _socket: {} }, { handshake: { address: undefined }, conn: {} }])(
    'a ws or socket.io client %p whose connection has no address: BadRequestException',
    (client) => {
      expect(() => gateway(client)).toThrow(BadRequestException);
    },
  );

  it("a gateway client of another kind: a TypeError naming the fix (a programming error, not the client's)", () => {
    expect(() => gateway({ id: 'x' })).toThrow(TypeError);
    expect(() => gateway({ id: 'x' })).toThrow(/give the limit a key or the module a tracker/);
  });

  it('a ws client with an address keys by it', () => {
    expect(gateway({ _socket: { remoteAddress: '2001:db8:0:ab12::1' } })).toBe('2001:db8:0:ab00::/56');
  });
});

// The exported default, for a tracker or getTracker that builds on it.
describe('defaultTracker', () => {
  const http = (req: object) => ({ getType: () => 'http', switchToHttp: () => ({ getRequest: () => req }) }) as unknown as ExecutionContext;

  it("keys an HTTP request by its client's address, IPv6 by its /56 unless told otherwise", () => {
    expect(defaultTracker(http({ ip: '::ffff:203.0.113.7' }))).toBe('203.0.113.7');
    expect(defaultTracker(http({ ip: '2001:db8:0:ab12::1' }))).toBe('2001:db8:0:ab00::/56');
    expect(defaultTracker(http({ ip: '2001:db8:0:ab12::1' }), { ipv6Subnet: 64 })).toBe('2001:db8:0:ab12::/64');
    expect(defaultTracker(http({ ip: '2001:db8:0:ab12::1' }), { ipv6Subnet: false })).toBe('2001:db8:0:ab12::1');
  });

  it('a tracker builds on it: a signed-in user by id, anyone else by address', () => {
    const tracker = (ctx: ExecutionContext) => ctx.switchToHttp().getRequest<{ user?: { id: string } }>().user?.id ?? defaultTracker(ctx);
    expect(tracker(http({ ip: '198.51.100.1', user: { id: 'u42' } }))).toBe('u42');
    expect(tracker(http({ ip: '198.51.100.1' }))).toBe('198.51.100.1');
  });

  it('refuses what the guards refuse: no client address (400), a microservice context (no default)', () => {
    expect(() => defaultTracker(http({}))).toThrow(BadRequestException);
    expect(() => defaultTracker({ getType: () => 'rpc' } as unknown as ExecutionContext)).toThrow(/'rpc' handlers have no default tracker/);
  });

  it.each([
    [undefined, TypeError, /ctx must be the guard's ExecutionContext/],
    [{}, TypeError, /ctx must be the guard's ExecutionContext/],
  ])('a ctx %p: %p', (ctx, type, message) => {
    expect(() => defaultTracker(ctx as unknown as ExecutionContext)).toThrow(type);
    expect(() => defaultTracker(ctx as unknown as ExecutionContext)).toThrow(message);
  });

  it.each([
    [null, TypeError, /options must be an object/],
    [{ ipv6Subnet: 0 }, RangeError, /defaultTracker: options\.ipv6Subnet must be an integer from 1 to 128 or false, got 0/],
    [{ ipv6Subnet: '64' }, TypeError, /defaultTracker: options\.ipv6Subnet/],
    [{ ipv6Subnet: true }, TypeError, /defaultTracker: options\.ipv6Subnet/],
  ])('options %p: %p naming the argument', (options, type, message) => {
    const call = () => defaultTracker(http({ ip: '::1' }), options as never);
    expect(call).toThrow(type);
    expect(call).toThrow(message);
  });
});

import { BadRequestException, type ExecutionContext } from '@nestjs/common';
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

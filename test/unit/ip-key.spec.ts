import fc from 'fast-check';
import { ipKey } from '../../lib/transports/ip-key.js';
import { resolveOptions } from '../../lib/redis-limit.options.js';

describe('ipKey', () => {
  it.each([
    // IPv6: masked to the prefix, printed canonically (RFC 5952)
    ['2001:db8:0:ab12:1:2:3:4', 56, '2001:db8:0:ab00::/56'],
    ['2001:0DB8:0000:AB12::1', 56, '2001:db8:0:ab00::/56'],
    ['2001:db8:0:abff:ffff:ffff:ffff:ffff', 56, '2001:db8:0:ab00::/56'],
    ['2001:db8::1', 64, '2001:db8::/64'],
    ['2001:db8:1:2:3:4:5:6', 128, '2001:db8:1:2:3:4:5:6/128'],
    ['2001:db8:ffff::', 33, '2001:db8:8000::/33'],
    ['ffff:ffff::', 1, '8000::/1'],
    ['::1', 56, '::/56'],
    ['::1', 128, '::1/128'],
    ['::', 56, '::/56'],
    // zone ids name the server's interface: dropped
    ['fe80::1ff:fe23:4567:890a%eth0', 64, 'fe80::/64'],
    ['fe80::1%3', false, 'fe80::1'],
    // false: the whole address, canonical
    ['2001:DB8:0:0:1:0:0:1', false, '2001:db8::1:0:0:1'],
    ['2001:db8:0:1:1:1:1:1', false, '2001:db8:0:1:1:1:1:1'],
    ['1:0:0:2:0:0:0:3', false, '1:0:0:2::3'],
    ['0:0:1:0:0:1:0:0', false, '::1:0:0:1:0:0'],
    // an embedded dotted quad outside ::ffff:0:0/96 and 64:ff9b::/96 is just the last 32 bits
    ['2001:db8::192.0.2.33', false, '2001:db8::c000:221'],
    // IPv4 and IPv4-mapped IPv6: the IPv4 address, never masked
    ['203.0.113.7', 56, '203.0.113.7'],
    ['::ffff:203.0.113.7', 56, '203.0.113.7'],
    ['::FFFF:203.0.113.7', false, '203.0.113.7'],
    ['::ffff:cb00:7107', 56, '203.0.113.7'],
    ['0:0:0:0:0:ffff:102:304', 8, '1.2.3.4'],
    ['::ffff:1.2.3.4%lo', 56, '1.2.3.4'],
    // NAT64 (64:ff9b::/96): the IPv4 address it carries
    ['64:ff9b::c000:201', 56, '192.0.2.1'],
    ['64:ff9b::192.0.2.1', false, '192.0.2.1'],
    ['64:FF9B:0:0:0:0:C000:201', 128, '192.0.2.1'],
    // ...but not the local-use prefix (64:ff9b:1::/48, where the IPv4 sits elsewhere) nor past the /96
    ['64:ff9b:1::c000:201', 56, '64:ff9b:1::/56'],
    ['64:ff9b::1:c000:201', false, '64:ff9b::1:c000:201'],
    // a forwarded port (Azure App Service sends them) is dropped; a bracketed IPv6 address with or without one
    ['1.2.3.4:51234', 56, '1.2.3.4'],
    ['1.2.3.4:0', false, '1.2.3.4'],
    ['203.0.113.7:65535', 56, '203.0.113.7'],
    ['[2001:db8::1]:443', 56, '2001:db8::/56'],
    ['[2001:db8::1]:443', false, '2001:db8::1'],
    ['[2001:DB8::1]', false, '2001:db8::1'],
    ['[::ffff:1.2.3.4]:80', 56, '1.2.3.4'],
    ['[64:ff9b::192.0.2.1]:8080', 56, '192.0.2.1'],
    ['[fe80::1%eth0]:22', false, 'fe80::1'],
    // not an address: as it is
    ['unknown', 56, 'unknown'],
    ['1.2.3', 56, '1.2.3'],
    ['01.2.3.4', 56, '01.2.3.4'],
    ['256.1.1.1', 56, '256.1.1.1'],
    ['1::2::3', 56, '1::2::3'],
    ['1:2:3:4:5:6:7:8:9', 56, '1:2:3:4:5:6:7:8:9'],
    ['1:2:3:4:5:6:7::8', 56, '1:2:3:4:5:6:7::8'],
    ['12345::', 56, '12345::'],
    ['1.2.3.4::', 56, '1.2.3.4::'],
    ['::1%', 56, '::1%'],
    ['', 56, ''],
    ['1.2.3.4:65536', 56, '1.2.3.4:65536'],
    ['1.2.3.4:', 56, '1.2.3.4:'],
    ['1.2.3.4:80:80', 56, '1.2.3.4:80:80'],
    ['01.2.3.4:80', 56, '01.2.3.4:80'],
    ['[1.2.3.4]:80', 56, '[1.2.3.4]:80'],
    ['[2001:db8::1]:', 56, '[2001:db8::1]:'],
    ['[2001:db8::1]:x', 56, '[2001:db8::1]:x'],
    ['[2001:db8::1', 56, '[2001:db8::1'],
    ['[]:80', 56, '[]:80'],
  ])('%s with ipv6Subnet %p is %s', (address, subnet, key) => {
    expect(ipKey(address, subnet as number | false)).toBe(key);
  });

  const group = fc.integer({ min: 0, max: 0xffff });
  const address = fc.array(group, { minLength: 8, maxLength: 8 });
  const isMapped = (groups: number[]) => groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
  const isNat64 = (groups: number[]) => groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0);
  /** An IPv4 address in IPv6 clothing: it keys as the IPv4 address. */
  const carriesIpv4 = (groups: number[]) => isMapped(groups) || isNat64(groups);
  const bit = (groups: number[], i: number) => (groups[i >> 4]! >> (15 - (i & 15))) & 1;
  const withBit = (groups: number[], i: number, value: number) =>
    groups.map((g, j) => (j === i >> 4 ? (g & ~(1 << (15 - (i & 15)))) | (value << (15 - (i & 15))) : g));
  /** Any of the textual forms a parser must read: full or compressed, padded or not, either case. */
  const text = (groups: number[], { pad, upper, compress }: { pad: boolean; upper: boolean; compress: boolean }) => {
    const hex = groups.map((g) => (pad ? g.toString(16).padStart(4, '0') : g.toString(16)));
    let out = hex.join(':');
    if (compress) {
      const zero = groups.indexOf(0);
      if (zero !== -1) {
        let end = zero;
        while (end < 8 && groups[end] === 0) end++;
        out = `${hex.slice(0, zero).join(':')}::${hex.slice(end).join(':')}`;
      }
    }
    return upper ? out.toUpperCase() : out;
  };
  const form = fc.record({ pad: fc.boolean(), upper: fc.boolean(), compress: fc.boolean() });

  it('two addresses equal in their first N bits share a key; one differing bit there parts them', () => {
    fc.assert(
      fc.property(address, address, fc.integer({ min: 1, max: 128 }), fc.nat(), form, form, (a, rest, bits, flip, formA, formB) => {
        // b: a's first `bits` bits, then anything
        let b = rest;
        for (let i = 0; i < bits; i++) b = withBit(b, i, bit(a, i));
        fc.pre(!carriesIpv4(a) && !carriesIpv4(b));
        expect(ipKey(text(b, formB), bits)).toBe(ipKey(text(a, formA), bits));

        const i = flip % bits;
        const c = withBit(a, i, 1 - bit(a, i));
        fc.pre(!carriesIpv4(c));
        expect(ipKey(text(c, formB), bits)).not.toBe(ipKey(text(a, formA), bits));
      }),
    );
  });

  it('the whole address prints as the WHATWG URL parser prints it', () => {
    fc.assert(
      fc.property(address, form, (a, f) => {
        fc.pre(!carriesIpv4(a));
        expect(`[${ipKey(text(a, f), false)}]`).toBe(new URL(`http://[${text(a, f)}]/`).hostname);
      }),
    );
  });

  const octets = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 });
  const subnet = fc.oneof(fc.integer({ min: 1, max: 128 }), fc.constant(false as const));

  it('an IPv4-mapped or NAT64 address keys as its IPv4 address, in hex or dotted form', () => {
    fc.assert(
      fc.property(octets, subnet, fc.constantFrom('::ffff:', '64:ff9b::'), (o, bits, prefix) => {
        const v4 = o.join('.');
        const hex = `${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;
        expect(ipKey(`${prefix}${v4}`, bits)).toBe(v4);
        expect(ipKey(`${prefix}${hex}`, bits)).toBe(v4);
        expect(ipKey(v4, bits)).toBe(v4);
      }),
    );
  });

  it('a port after an IPv4 address or a bracketed IPv6 one changes nothing', () => {
    const port = fc.integer({ min: 0, max: 65_535 });
    fc.assert(
      fc.property(octets, port, subnet, (o, p, bits) => {
        expect(ipKey(`${o.join('.')}:${p}`, bits)).toBe(o.join('.'));
      }),
    );
    fc.assert(
      fc.property(address, form, port, subnet, (a, f, p, bits) => {
        expect(ipKey(`[${text(a, f)}]:${p}`, bits)).toBe(ipKey(text(a, f), bits));
        expect(ipKey(`[${text(a, f)}]`, bits)).toBe(ipKey(text(a, f), bits));
      }),
    );
  });
});

describe('ipv6Subnet option', () => {
  it('defaults to 56; false and integers 1..128 are taken', () => {
    expect(resolveOptions({}).ipv6Subnet).toBe(56);
    expect(resolveOptions({ ipv6Subnet: false }).ipv6Subnet).toBe(false);
    expect(resolveOptions({ ipv6Subnet: 1 }).ipv6Subnet).toBe(1);
    expect(resolveOptions({ ipv6Subnet: 128 }).ipv6Subnet).toBe(128);
  });

  it.each([0, 129, 56.5, -1, Number.NaN, Infinity])('%p is a RangeError naming ipv6Subnet', (value) => {
    expect(() => resolveOptions({ ipv6Subnet: value })).toThrow(
      new RangeError(`RedisLimitModule: ipv6Subnet must be an integer from 1 to 128 or false, got ${value}`),
    );
  });

  it.each([true, '56', null])('%p is a TypeError naming ipv6Subnet', (value) => {
    expect(() => resolveOptions({ ipv6Subnet: value as never })).toThrow(TypeError);
    expect(() => resolveOptions({ ipv6Subnet: value as never })).toThrow(/ipv6Subnet must be an integer from 1 to 128 or false/);
  });
});

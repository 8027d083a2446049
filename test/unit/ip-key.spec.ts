import fc from 'fast-check';
import { ipKey } from '../../lib/rate-limit/ip-key.js';
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
    // an embedded dotted quad outside ::ffff:0:0/96 is just the last 32 bits
    ['64:ff9b::192.0.2.33', false, '64:ff9b::c000:221'],
    // IPv4 and IPv4-mapped IPv6: the IPv4 address, never masked
    ['203.0.113.7', 56, '203.0.113.7'],
    ['::ffff:203.0.113.7', 56, '203.0.113.7'],
    ['::FFFF:203.0.113.7', false, '203.0.113.7'],
    ['::ffff:cb00:7107', 56, '203.0.113.7'],
    ['0:0:0:0:0:ffff:102:304', 8, '1.2.3.4'],
    ['::ffff:1.2.3.4%lo', 56, '1.2.3.4'],
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
  ])('%s with ipv6Subnet %p is %s', (address, subnet, key) => {
    expect(ipKey(address, subnet as number | false)).toBe(key);
  });

  const group = fc.integer({ min: 0, max: 0xffff });
  const address = fc.array(group, { minLength: 8, maxLength: 8 });
  const isMapped = (groups: number[]) => groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
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
        fc.pre(!isMapped(a) && !isMapped(b));
        expect(ipKey(text(b, formB), bits)).toBe(ipKey(text(a, formA), bits));

        const i = flip % bits;
        const c = withBit(a, i, 1 - bit(a, i));
        fc.pre(!isMapped(c));
        expect(ipKey(text(c, formB), bits)).not.toBe(ipKey(text(a, formA), bits));
      }),
    );
  });

  it('the whole address prints as the WHATWG URL parser prints it', () => {
    fc.assert(
      fc.property(address, form, (a, f) => {
        fc.pre(!isMapped(a));
        expect(`[${ipKey(text(a, f), false)}]`).toBe(new URL(`http://[${text(a, f)}]/`).hostname);
      }),
    );
  });

  it('an IPv4-mapped address keys as its IPv4 address, in hex or dotted form', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 }), fc.integer({ min: 1, max: 128 }), (o, bits) => {
        const v4 = o.join('.');
        const hex = `${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;
        expect(ipKey(`::ffff:${v4}`, bits)).toBe(v4);
        expect(ipKey(`::ffff:${hex}`, bits)).toBe(v4);
        expect(ipKey(v4, bits)).toBe(v4);
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

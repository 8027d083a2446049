/**
 * The default tracker's key for a client address. An IPv6 client owns a whole prefix (a /64 at
 * least, often a /56 or /48), so counting per address would let one client walk around its limit
 * by changing addresses: an IPv6 address is masked to its first `ipv6Subnet` bits and printed in
 * one canonical form (RFC 5952), e.g. `2001:db8:0:ab00::/56`. IPv4 addresses, and IPv6 ones that
 * carry an IPv4 client's (see carriedIpv4), key as the IPv4 address, so a client counts once
 * whichever way it arrived. A port is dropped (`1.2.3.4:5678`, `[2001:db8::1]:443`): some proxies
 * forward one (Azure App Service does), and each new connection would otherwise be a new client.
 * Anything else (not an IP address) is returned as it is.
 */
export function ipKey(address: string, ipv6Subnet: number | false): string {
  const parsed = parseAddress(address);
  if (parsed === undefined) return address;
  const v4 = parsed.length === 4 ? parsed : carriedIpv4(parsed);
  if (v4 !== undefined) return printIpv4(v4);
  if (ipv6Subnet === false) return printIpv6(parsed);
  return `${printIpv6(mask(parsed, ipv6Subnet))}/${ipv6Subnet}`;
}

const DECIMAL_OCTET = /^(0|[1-9]\d{0,2})$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;
// A bare IPv6 address has colons of its own: only its bracketed form (RFC 3986) takes a port.
const BRACKETED = /^\[([^\]]+)\](?::(\d{1,5}))?$/;
const IPV4_AND_PORT = /^([\d.]+):(\d{1,5})$/;
const MAX_PORT = 65_535;

/** The four octets of an IPv4 address or the eight groups of an IPv6 one, with or without a port. */
function parseAddress(text: string): number[] | undefined {
  const bracketed = BRACKETED.exec(text);
  if (bracketed !== null) return isPort(bracketed[2]) ? parseIpv6(bracketed[1]!) : undefined;
  const withPort = IPV4_AND_PORT.exec(text);
  if (withPort !== null) return isPort(withPort[2]) ? parseIpv4(withPort[1]!) : undefined;
  return parseIpv4(text) ?? parseIpv6(text);
}

const isPort = (digits: string | undefined): boolean => digits === undefined || Number(digits) <= MAX_PORT;

/** Four octets of a dotted-quad address; leading zeros are refused (some parsers read them as octal). */
function parseIpv4(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((part) => DECIMAL_OCTET.test(part))) return undefined;
  const octets = parts.map(Number);
  return octets.every((octet) => octet <= 255) ? octets : undefined;
}

/**
 * Eight 16-bit groups, from any textual form: `::` compression, leading zeros, either case, a
 * dotted-quad tail (`::ffff:1.2.3.4`) and a zone id (`fe80::1%eth0`). The zone names the server's
 * own interface, not the client, so it is dropped.
 */
function parseIpv6(text: string): number[] | undefined {
  const zone = text.indexOf('%');
  if (zone === 0 || zone === text.length - 1) return undefined;
  const address = zone === -1 ? text : text.slice(0, zone);
  const halves = address.split('::');
  if (halves.length > 2) return undefined;
  const head = parseGroups(halves[0]!, halves.length === 1);
  const tail = halves.length === 2 ? parseGroups(halves[1]!, true) : [];
  if (head === undefined || tail === undefined) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  // `::` stands for one zero group or more
  if (head.length + tail.length > 7) return undefined;
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** The groups of one side of `::` (`''` is none); only the address's last group may be a dotted quad. */
function parseGroups(text: string, endsAddress: boolean): number[] | undefined {
  if (text === '') return [];
  const parts = text.split(':');
  const groups: number[] = [];
  for (const [i, part] of parts.entries()) {
    if (HEX_GROUP.test(part)) {
      groups.push(parseInt(part, 16));
      continue;
    }
    const v4 = endsAddress && i === parts.length - 1 ? parseIpv4(part) : undefined;
    if (v4 === undefined) return undefined;
    groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
  }
  return groups;
}

/**
 * The IPv4 address in an IPv6 one that stands for an IPv4 client: IPv4-mapped (`::ffff:0:0/96`,
 * what a dual-stack socket reports for an IPv4 client) or NAT64's well-known prefix
 * (`64:ff9b::/96`, RFC 6052: how a translator in front of an IPv6-only server presents IPv4
 * clients; masked like an IPv6 address, every one of them would share one counter).
 */
function carriedIpv4(groups: readonly number[]): number[] | undefined {
  const mapped = groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff;
  const nat64 = groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((group) => group === 0);
  if (!mapped && !nat64) return undefined;
  return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff];
}

/** The first `bits` bits of the address, the rest zero. */
function mask(groups: readonly number[], bits: number): number[] {
  return groups.map((group, i) => {
    const kept = Math.min(16, Math.max(0, bits - i * 16));
    return group & ((0xffff << (16 - kept)) & 0xffff);
  });
}

const printIpv4 = (octets: readonly number[]): string => octets.join('.');

/** RFC 5952: lower-case hex without leading zeros; the longest run of two or more zero groups
 * (the first of equal runs) written `::`. */
function printIpv6(groups: readonly number[]): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let start = 0; start < 8; start++) {
    let length = 0;
    while (start + length < 8 && groups[start + length] === 0) length++;
    if (length > bestLength) [bestStart, bestLength] = [start, length];
    start += length;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart === -1) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

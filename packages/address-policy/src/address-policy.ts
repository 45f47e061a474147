import { BlockList, isIP } from 'node:net';

/**
 * The one SSRF address policy of the gateway: which IP addresses an upstream may not be unless
 * private upstreams were explicitly allowed. The admin judges base URLs with it (literal
 * addresses, and what a host name resolves to when the model is created), the proxy judges
 * every resolved address right before it connects. Ranges are matched with `node:net`'s
 * BlockList (no hand-parsed bit arithmetic, no dependency).
 *
 * IPv4 is refused by a list of special-purpose ranges (IANA's registry, RFC 6890). IPv6 is
 * allowed only inside global unicast (2000::/3) and outside the special-purpose ranges there;
 * every form that embeds or reaches an IPv4 address through a translator or a relay (IPv4-
 * compatible, IPv4-translated, NAT64, 6to4, Teredo) is refused whole, because where it really
 * leads depends on a gateway we do not control and no provider publishes such addresses.
 * IPv4-mapped addresses (::ffff:a.b.c.d) are the IPv4 address itself on a dual-stack socket,
 * so they are judged exactly as that IPv4 address.
 */

/** One refused range: its network, prefix length and why it is refused (for logs and messages). */
interface RefusedRange {
  network: string;
  prefix: number;
  reason: string;
}

const refusedIpv4Ranges: readonly RefusedRange[] = [
  { network: '0.0.0.0', prefix: 8, reason: '"this network" (0.0.0.0/8)' },
  { network: '10.0.0.0', prefix: 8, reason: 'private (10.0.0.0/8)' },
  { network: '100.64.0.0', prefix: 10, reason: 'carrier-grade NAT (100.64.0.0/10)' },
  { network: '127.0.0.0', prefix: 8, reason: 'loopback (127.0.0.0/8)' },
  { network: '169.254.0.0', prefix: 16, reason: 'link-local, cloud metadata (169.254.0.0/16)' },
  { network: '172.16.0.0', prefix: 12, reason: 'private (172.16.0.0/12)' },
  { network: '192.0.0.0', prefix: 24, reason: 'IETF protocol assignments (192.0.0.0/24)' },
  { network: '192.0.2.0', prefix: 24, reason: 'documentation (192.0.2.0/24)' },
  { network: '192.88.99.0', prefix: 24, reason: '6to4 relay anycast (192.88.99.0/24)' },
  { network: '192.168.0.0', prefix: 16, reason: 'private (192.168.0.0/16)' },
  { network: '198.18.0.0', prefix: 15, reason: 'benchmarking (198.18.0.0/15)' },
  { network: '198.51.100.0', prefix: 24, reason: 'documentation (198.51.100.0/24)' },
  { network: '203.0.113.0', prefix: 24, reason: 'documentation (203.0.113.0/24)' },
  { network: '224.0.0.0', prefix: 4, reason: 'multicast (224.0.0.0/4)' },
  { network: '240.0.0.0', prefix: 4, reason: 'reserved or broadcast (240.0.0.0/4)' },
];

// Checked in order, before the global-unicast rule, so the reason names the specific range.
const refusedIpv6Ranges: readonly RefusedRange[] = [
  { network: '::', prefix: 128, reason: 'unspecified (::)' },
  { network: '::1', prefix: 128, reason: 'loopback (::1)' },
  { network: '::', prefix: 96, reason: 'IPv4-compatible (::/96, deprecated)' },
  { network: '::ffff:0:0:0', prefix: 96, reason: 'IPv4-translated (::ffff:0:0:0/96)' },
  { network: '64:ff9b::', prefix: 96, reason: 'NAT64 (64:ff9b::/96)' },
  { network: '64:ff9b:1::', prefix: 48, reason: 'local NAT64 (64:ff9b:1::/48)' },
  { network: '100::', prefix: 64, reason: 'discard-only (100::/64)' },
  { network: 'fc00::', prefix: 7, reason: 'unique-local (fc00::/7)' },
  { network: 'fe80::', prefix: 10, reason: 'link-local (fe80::/10)' },
  { network: 'fec0::', prefix: 10, reason: 'site-local (fec0::/10, deprecated)' },
  { network: 'ff00::', prefix: 8, reason: 'multicast (ff00::/8)' },
  { network: '2001::', prefix: 32, reason: 'Teredo (2001::/32)' },
  { network: '2001::', prefix: 23, reason: 'IETF protocol assignments, benchmarking, ORCHID (2001::/23)' },
  { network: '2001:db8::', prefix: 32, reason: 'documentation (2001:db8::/32)' },
  { network: '2002::', prefix: 16, reason: '6to4 (2002::/16)' },
  { network: '3fff::', prefix: 20, reason: 'documentation (3fff::/20)' },
];

/** One BlockList per range (so a match names its range); a family's lists never hold the other family. */
function compile(ranges: readonly RefusedRange[], family: 'ipv4' | 'ipv6'): Array<{ list: BlockList; reason: string }> {
  return ranges.map(({ network, prefix, reason }) => {
    const list = new BlockList();
    list.addSubnet(network, prefix, family);
    return { list, reason };
  });
}

const ipv4Rules = compile(refusedIpv4Ranges, 'ipv4');
const ipv6Rules = compile(refusedIpv6Ranges, 'ipv6');
const ipv4Mapped = compile([{ network: '::ffff:0:0', prefix: 96, reason: 'IPv4-mapped' }], 'ipv6')[0]!.list;
const globalUnicast = compile([{ network: '2000::', prefix: 3, reason: 'global unicast' }], 'ipv6')[0]!.list;

/** An IP literal without the brackets a URL puts around IPv6 (`[::1]` → `::1`). */
export function unbracketed(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * Why an IP address (v4 or v6, brackets allowed) may not be an upstream, e.g.
 * `loopback (127.0.0.0/8)`; undefined when it may. Anything that is not an IP literal is
 * refused too (`not an IP address`): a caller judges names by what they resolve to.
 */
export function disallowedAddressReason(address: string): string | undefined {
  const ip = unbracketed(address);
  const family = isIP(ip);
  if (family === 4) return ipv4Rules.find((rule) => rule.list.check(ip, 'ipv4'))?.reason;
  if (family !== 6) return 'not an IP address';
  if (ipv4Mapped.check(ip, 'ipv6')) {
    // BlockList matches an IPv4-mapped address against IPv4 rules: the same answer as a.b.c.d.
    const reason = ipv4Rules.find((rule) => rule.list.check(ip, 'ipv6'))?.reason;
    return reason === undefined ? undefined : `IPv4-mapped ${reason}`;
  }
  const special = ipv6Rules.find((rule) => rule.list.check(ip, 'ipv6'));
  if (special !== undefined) return special.reason;
  return globalUnicast.check(ip, 'ipv6') ? undefined : 'outside IPv6 global unicast (2000::/3)';
}

/** Whether an IP address is in a range the policy refuses (see disallowedAddressReason). */
export function isDisallowedAddress(address: string): boolean {
  return disallowedAddressReason(address) !== undefined;
}

/**
 * Whether a host name names this machine by convention rather than through DNS
 * (`localhost`, `*.localhost`, RFC 6761), so it is refused without a lookup.
 */
export function isLocalHostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

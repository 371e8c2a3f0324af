/**
 * Which IP addresses a foreign call may connect to. Everything that is not ordinary public unicast is refused:
 * loopback, private, link-local (cloud metadata included), CGNAT, multicast, broadcast, unspecified and the other
 * special-purpose ranges of the IANA registries, in IPv4, IPv6, and IPv6 forms that carry an IPv4 address.
 *
 * IPv6 forms that a translator or relay turns into an IPv4 destination (NAT64, SIIT, IPv4-compatible, 6to4) are
 * judged by the IPv4 address they carry, so wrapping `10.0.0.1` never gets it past the guard. They keep their IPv6
 * spelling in the verdict because that is what the socket connects to; only IPv4-mapped IPv6 is rewritten to IPv4
 * (in cidr.ts), since a dual-stack socket really does speak IPv4 to it.
 *
 * An operator may admit refused unicast ranges with CIDRs (`SWITCHYARD_EGRESS_ALLOWED_NETWORKS`), e.g. a partner
 * network or, in tests, loopback; a CIDR admits an address it contains or, for the forms above, whose embedded IPv4
 * address it contains. Unspecified, multicast and broadcast addresses are never admitted: no foreign agent can live
 * there, and `0.0.0.0` would reach this very host.
 */
import { CidrSet, ipv6Words, normalizeIp, wordsToIPv4, type IpAddress } from "./cidr.js";

export type BlockedRange =
  | "unspecified"
  | "loopback"
  | "private"
  | "metadata"
  | "link-local"
  | "cgnat"
  | "multicast"
  | "broadcast"
  | "reserved";

/** Ranges no operator allowlist can open. */
const NEVER_ADMISSIBLE: ReadonlySet<BlockedRange> = new Set(["unspecified", "multicast", "broadcast"]);

// First match wins, so the narrow, more telling names come before the wide ranges that contain them.
const BLOCKED_RANGES: ReadonlyArray<readonly [BlockedRange, CidrSet]> = [
  ["unspecified", new CidrSet(["0.0.0.0/32", "::/128"])],
  ["broadcast", new CidrSet(["255.255.255.255/32"])],
  ["metadata", new CidrSet(["169.254.169.254/32", "fd00:ec2::254/128"])],
  ["loopback", new CidrSet(["127.0.0.0/8", "::1/128"])],
  [
    "private",
    new CidrSet([
      "10.0.0.0/8",
      "172.16.0.0/12",
      "192.168.0.0/16",
      "fc00::/7", // unique local
      "64:ff9b:1::/48", // local-use NAT64 (RFC 8215): translates into whatever the local network decides
    ]),
  ],
  ["link-local", new CidrSet(["169.254.0.0/16", "fe80::/10"])],
  ["cgnat", new CidrSet(["100.64.0.0/10"])],
  ["multicast", new CidrSet(["224.0.0.0/4", "ff00::/8"])],
  [
    "reserved",
    new CidrSet([
      "0.0.0.0/8", // "this network"
      "192.0.0.0/24", // IETF protocol assignments
      "192.0.2.0/24", // documentation (TEST-NET-1)
      "192.88.99.0/24", // 6to4 relay anycast
      "198.18.0.0/15", // benchmarking
      "198.51.100.0/24", // documentation (TEST-NET-2)
      "203.0.113.0/24", // documentation (TEST-NET-3)
      "240.0.0.0/4", // future use
      "100::/64", // discard-only
      // IETF protocol assignments: nothing in it hosts an ordinary service. The entries below it are inside it and
      // listed so a reader finds them by name.
      "2001::/23",
      "2001::/32", // Teredo: the embedded address is obfuscated, so it cannot be judged
      "2001:2::/48", // benchmarking
      "2001:10::/28", // ORCHID (deprecated)
      "2001:20::/28", // ORCHIDv2: cryptographic identifiers, not locators
      "2001:db8::/32", // documentation
      "3fff::/20", // documentation (RFC 9637)
      "fec0::/10", // deprecated site-local
    ]),
  ],
];

// IPv6 prefixes whose low bits carry an IPv4 address that a translator or relay will end up connecting to.
const NAT64 = new CidrSet(["64:ff9b::/96"]);
const IPV4_TRANSLATED = new CidrSet(["::ffff:0:0:0/96"]); // SIIT, RFC 2765: words 4..5 are ffff:0000
const SIX_TO_FOUR = new CidrSet(["2002::/16"]);
const IPV4_COMPATIBLE = new CidrSet(["::/96"]);

// IANA has allocated only 2000::/3 for global unicast; the rest of the IPv6 space that the named ranges above do not
// cover is reserved by the IETF (100:0:0:1::/64, 5f00::/16 and whatever gets carved out next), so it is refused
// rather than enumerated.
const GLOBAL_UNICAST_V6 = new CidrSet(["2000::/3"]);

export type AddressVerdict =
  | { allowed: true; address: string; family: 4 | 6; admittedBy?: "operator" }
  | {
      allowed: false;
      address: string;
      family: 4 | 6;
      range: BlockedRange;
      /** The kind of IPv6 address the refused IPv4 address was embedded in, and that IPv4 address. */
      embeddedIn?: string;
      embeddedAddress?: string;
      admissible: boolean;
    };

export interface BlockedMatch {
  range: BlockedRange;
  embeddedIn?: string;
  embeddedAddress?: string;
}

/** The range that refuses `ip`, or undefined when it is ordinary public unicast. */
export function blockedRange(ip: IpAddress): BlockedMatch | undefined {
  for (const [range, set] of BLOCKED_RANGES) if (set.contains(ip)) return { range };
  if (ip.family === 4) return undefined;
  const embedded = embeddedIPv4(ip.address);
  if (embedded !== undefined) {
    // The IPv6 wrapper adds nothing of its own: the packet ends up at the IPv4 address, so that is what is judged.
    const inner = blockedRange({ address: embedded.ipv4, family: 4 });
    return inner === undefined ? undefined : { range: inner.range, embeddedIn: embedded.kind, embeddedAddress: embedded.ipv4 };
  }
  if (!GLOBAL_UNICAST_V6.contains(ip)) return { range: "reserved" };
  return undefined;
}

/**
 * Judges one address. `admitted` holds the operator's CIDRs; an address they contain (or whose embedded IPv4 address
 * they contain) is allowed unless its range can never be admitted. Anything that is not an IP literal is refused as
 * `reserved`.
 */
export function checkAddress(address: string, admitted: CidrSet): AddressVerdict {
  const ip = normalizeIp(address);
  if (ip === undefined) return { allowed: false, address, family: 4, range: "reserved", admissible: false };
  const blocked = blockedRange(ip);
  if (blocked === undefined) return { allowed: true, address: ip.address, family: ip.family };
  const admissible = !NEVER_ADMISSIBLE.has(blocked.range);
  const named = admitted.contains(ip) || (blocked.embeddedAddress !== undefined && admitted.contains({ address: blocked.embeddedAddress, family: 4 }));
  if (admissible && named) return { allowed: true, address: ip.address, family: ip.family, admittedBy: "operator" };
  const { embeddedIn, embeddedAddress } = blocked;
  const embedded = embeddedIn !== undefined && embeddedAddress !== undefined ? { embeddedIn, embeddedAddress } : {};
  return { allowed: false, address: ip.address, family: ip.family, range: blocked.range, admissible, ...embedded };
}

function embeddedIPv4(address: string): { ipv4: string; kind: string } | undefined {
  const words = ipv6Words(address);
  if (NAT64.contains(address)) return { ipv4: wordsToIPv4(words[6]!, words[7]!), kind: "NAT64" };
  if (IPV4_TRANSLATED.contains(address)) return { ipv4: wordsToIPv4(words[6]!, words[7]!), kind: "IPv4-translated IPv6" };
  if (SIX_TO_FOUR.contains(address)) return { ipv4: wordsToIPv4(words[1]!, words[2]!), kind: "6to4" };
  if (IPV4_COMPATIBLE.contains(address)) return { ipv4: wordsToIPv4(words[6]!, words[7]!), kind: "IPv4-compatible IPv6" };
  return undefined;
}

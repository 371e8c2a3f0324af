/**
 * CIDR parsing and matching for IPv4 and IPv6, on top of node:net's BlockList.
 *
 * Addresses are normalised before any check (zone id and brackets dropped, IPv4-mapped IPv6 turned into the IPv4 it
 * carries) so that `::ffff:10.0.0.1` is judged exactly like `10.0.0.1` whichever list it is checked against.
 * Only the mapped form is rewritten: a socket given it speaks IPv4. IPv6 forms that a translator or relay turns into
 * IPv4 (NAT64, SIIT `::ffff:0:a.b.c.d`, 6to4, IPv4-compatible) stay IPv6 here and address-policy.ts judges the
 * IPv4 address they carry.
 */
import { BlockList, isIPv4, isIPv6 } from "node:net";
import { ErrorCode, SwitchyardError } from "../../errors.js";

export type IpFamily = 4 | 6;

export interface Cidr {
  /** The network address as written (normalised). */
  network: string;
  prefix: number;
  family: IpFamily;
}

/** A normalised IP address: what a socket will actually connect to. */
export interface IpAddress {
  address: string;
  family: IpFamily;
}

/**
 * Parses `10.0.0.0/8`, `fd00::/8`, `::ffff:10.0.0.0/104` (taken as `10.0.0.0/8`), or a bare address (a /32 or
 * /128). Throws InvalidArgument naming the bad entry; callers that read operator configuration pass
 * `code: ErrorCode.Config`.
 */
export function parseCidr(text: string, code: ErrorCode = ErrorCode.InvalidArgument): Cidr {
  const trimmed = text.trim();
  const slash = trimmed.indexOf("/");
  const rawNetwork = slash < 0 ? trimmed : trimmed.slice(0, slash);
  const network = normalizeIp(rawNetwork);
  if (network === undefined) throw new SwitchyardError(code, `not a CIDR: ${JSON.stringify(text)} (bad address)`, { details: { cidr: text } });
  // An IPv4-mapped network is written with an IPv6 prefix (`::ffff:10.0.0.0/104`) but normalises to IPv4, where
  // only the low 32 bits count; a prefix under 96 would reach beyond the mapped block, which IPv4 cannot express.
  const mapped = network.family === 4 && rawNetwork.includes(":");
  const [min, max] = mapped ? [96, 128] : [0, network.family === 4 ? 32 : 128];
  let prefix = max;
  if (slash >= 0) {
    const prefixText = trimmed.slice(slash + 1);
    prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
    if (!(prefix >= min && prefix <= max)) {
      throw new SwitchyardError(code, `not a CIDR: ${JSON.stringify(text)} (prefix must be ${min}..${max})`, { details: { cidr: text } });
    }
  }
  return { network: network.address, prefix: mapped ? prefix - 96 : prefix, family: network.family };
}

/**
 * Normalises an IP literal: strips `[...]` and an IPv6 zone id, and unwraps IPv4-mapped IPv6 (`::ffff:a.b.c.d` and
 * its hex spelling) to the IPv4 address. Returns undefined when the text is not an IP address.
 */
export function normalizeIp(text: string): IpAddress | undefined {
  let address = text.trim();
  if (address.startsWith("[") && address.endsWith("]")) address = address.slice(1, -1);
  const zone = address.indexOf("%");
  if (zone >= 0) address = address.slice(0, zone);
  if (isIPv4(address)) return { address, family: 4 };
  if (!isIPv6(address)) return undefined;
  const words = ipv6Words(address);
  const mapped = words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff;
  if (mapped) return { address: wordsToIPv4(words[6]!, words[7]!), family: 4 };
  // The WHATWG URL serialiser writes the canonical RFC 5952 form, so equal addresses compare equal as strings.
  return { address: new URL(`http://[${address}]/`).hostname.slice(1, -1), family: 6 };
}

/** True when `text` is an IP literal (bracketed IPv6 included). */
export function isIpLiteral(text: string): boolean {
  return normalizeIp(text) !== undefined;
}

/** A set of networks answering "does this address fall in any of them?". */
export class CidrSet {
  readonly cidrs: readonly Cidr[];
  readonly #list = new BlockList();

  constructor(cidrs: Iterable<string | Cidr>, code: ErrorCode = ErrorCode.InvalidArgument) {
    const parsed: Cidr[] = [];
    for (const entry of cidrs) {
      const cidr = typeof entry === "string" ? parseCidr(entry, code) : entry;
      this.#list.addSubnet(cidr.network, cidr.prefix, cidr.family === 4 ? "ipv4" : "ipv6");
      parsed.push(cidr);
    }
    this.cidrs = parsed;
  }

  get size(): number {
    return this.cidrs.length;
  }

  /** False for anything that is not an IP address. */
  contains(address: string | IpAddress): boolean {
    const ip = typeof address === "string" ? normalizeIp(address) : address;
    if (ip === undefined) return false;
    return this.#list.check(ip.address, ip.family === 4 ? "ipv4" : "ipv6");
  }
}

/** The eight 16-bit words of a valid IPv6 address (an embedded dotted IPv4 tail included). */
export function ipv6Words(address: string): number[] {
  let text = address.toLowerCase();
  const lastColon = text.lastIndexOf(":");
  const tail = text.slice(lastColon + 1);
  if (isIPv4(tail)) {
    const [a, b, c, d] = tail.split(".").map(Number) as [number, number, number, number];
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.includes("::") ? (text.split("::") as [string, string]) : [text, undefined];
  const headWords = head === "" ? [] : head.split(":").map((w) => parseInt(w, 16));
  if (rest === undefined) return headWords;
  const restWords = rest === "" ? [] : rest.split(":").map((w) => parseInt(w, 16));
  return [...headWords, ...new Array<number>(8 - headWords.length - restWords.length).fill(0), ...restWords];
}

export function wordsToIPv4(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}


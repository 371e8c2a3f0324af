/**
 * The address of the client behind the proxies the operator trusts (SWITCHYARD_TRUSTED_PROXIES): what console
 * sign-in failures are counted against, and what a console session records as its source.
 *
 * The rightmost-untrusted rule. `X-Forwarded-For` is read only when the socket peer is a trusted proxy; then the
 * header is walked from the right, skipping addresses that are trusted proxies, and the first untrusted address is
 * the client. Everything left of it was written by the client or by proxies nobody vouches for, so it is never
 * looked at: a client cannot choose the address it is counted under by sending the header itself.
 *
 * When every address is a trusted proxy, or the walk reaches an entry that is not an IP address (`unknown`, a host
 * name, an empty item, garbage), the client is the last trusted hop reached: the proxy that handed the entry over
 * is the most that is known. Addresses are normalised (IPv4-mapped IPv6 `::ffff:a.b.c.d` becomes `a.b.c.d`, IPv6
 * takes its canonical form, a zone id and brackets go, a `:port` some proxies append goes), so one client has one
 * spelling.
 */
import type { IncomingMessage } from "node:http";
import { ErrorCode } from "../errors.js";
import { CidrSet, normalizeIp } from "../foreign/egress/cidr.js";

export class TrustedProxies {
  readonly #set: CidrSet;

  /** IP addresses and CIDRs (IPv4 and IPv6; a bare address is a /32 or /128). A bad entry throws CONFIG. */
  constructor(entries: Iterable<string> = []) {
    this.#set = new CidrSet(entries, ErrorCode.Config);
  }

  get size(): number {
    return this.#set.size;
  }

  /** False for anything that is not an IP address. */
  contains(address: string): boolean {
    return this.#set.contains(address);
  }
}

/** An `X-Forwarded-For` entry (or a socket address) as a normalised IP; undefined when it is none. */
function entryAddress(entry: string): string | undefined {
  let text = entry.trim();
  // `1.2.3.4:5678` and `[2001:db8::1]:443`: some proxies append the client's port.
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(text);
  if (v4WithPort) text = v4WithPort[1]!;
  const v6WithPort = /^\[([^\]]+)\]:\d{1,5}$/.exec(text);
  if (v6WithPort) text = v6WithPort[1]!;
  return normalizeIp(text)?.address;
}

/**
 * The client's address for a request that arrived from `socketAddress` carrying `forwardedFor` (the
 * `X-Forwarded-For` header; several headers are read as one list, in order). With no trusted proxies the header is
 * ignored and the socket address is the client.
 */
export function clientAddress(socketAddress: string | undefined, forwardedFor: string | readonly string[] | undefined, trusted: TrustedProxies): string {
  const peer = socketAddress === undefined ? undefined : entryAddress(socketAddress);
  if (peer === undefined) return socketAddress ?? "unknown";
  if (trusted.size === 0 || !trusted.contains(peer) || forwardedFor === undefined) return peer;
  const entries = (typeof forwardedFor === "string" ? [forwardedFor] : forwardedFor).flatMap((header) => header.split(","));
  let client = peer;
  for (let i = entries.length - 1; i >= 0; i--) {
    const address = entryAddress(entries[i]!);
    if (address === undefined) return client;
    client = address;
    if (!trusted.contains(address)) return address;
  }
  return client;
}

/** `clientAddress` of a Node request. */
export function requestClientAddress(req: IncomingMessage, trusted: TrustedProxies): string {
  return clientAddress(req.socket.remoteAddress, req.headers["x-forwarded-for"], trusted);
}

/**
 * The per-agent egress allowlist: which host names a foreign call may name at all (before any DNS).
 *
 * Entries are an exact host (`agent.example.com`, an IP literal such as `203.0.113.7` or `[2001:db8::1]`) or a
 * wildcard for every subdomain (`*.example.com`, which does not match `example.com` itself), each optionally with
 * `:port`. Without a port any port is allowed; with one, the URL's effective port (80/443 when omitted) must equal it.
 * Matching is case-insensitive and ignores a trailing dot. Wildcards never match IP literals.
 */
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { normalizeIp } from "./cidr.js";

interface AllowEntry {
  text: string;
  wildcard: boolean;
  /** Lower-case name without the `*.`; for IP literals the normalised address. */
  name: string;
  port?: number;
}

export class HostAllowlist {
  readonly #entries: AllowEntry[];

  constructor(entries: readonly string[]) {
    this.#entries = entries.map(parseEntry);
  }

  get entries(): readonly string[] {
    return this.#entries.map((e) => e.text);
  }

  /** `hostname` as in `URL.hostname` (IPv6 in brackets); `port` the effective port. */
  allows(hostname: string, port: number): boolean {
    const ip = normalizeIp(hostname);
    const name = ip ? ip.address : canonicalName(hostname);
    return this.#entries.some((entry) => {
      if (entry.port !== undefined && entry.port !== port) return false;
      if (!entry.wildcard) return entry.name === name;
      return ip === undefined && name.endsWith(`.${entry.name}`);
    });
  }
}

function parseEntry(text: string): AllowEntry {
  const bad = (why: string) =>
    new SwitchyardError(ErrorCode.InvalidArgument, `egress allowlist entry ${JSON.stringify(text)} ${why}`, { details: { path: "allow_host", entry: text } });
  const trimmed = text.trim().toLowerCase();
  let host = trimmed;
  let portText: string | undefined;
  if (trimmed.startsWith("[")) {
    const close = trimmed.indexOf("]");
    if (close < 0) throw bad("has an unclosed [");
    host = trimmed.slice(0, close + 1);
    const rest = trimmed.slice(close + 1);
    if (rest !== "") {
      if (!rest.startsWith(":")) throw bad("has text after ]");
      portText = rest.slice(1);
    }
  } else if (trimmed.split(":").length === 2) {
    // Exactly one colon is host:port; more is a bare IPv6 address, which cannot carry a port without brackets.
    [host, portText] = trimmed.split(":") as [string, string];
  }
  if (portText !== undefined && !/^\d{1,5}$/.test(portText)) throw bad("has a malformed port");
  const port = portText === undefined ? undefined : Number(portText);
  if (port !== undefined && (port < 1 || port > 65535)) throw bad("has a port outside 1..65535");
  const wildcard = host.startsWith("*.");
  if (wildcard) host = host.slice(2);
  const ip = normalizeIp(host);
  if (ip !== undefined) {
    if (wildcard) throw bad("puts a wildcard on an IP address");
    return { text, wildcard: false, name: ip.address, ...(port !== undefined ? { port } : {}) };
  }
  const name = canonicalName(host);
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(name) || name.length > 253) {
    throw bad("is not a host name, `*.` wildcard or IP address (optionally with :port)");
  }
  // `*.com` would admit a whole top-level domain; require at least two labels under a wildcard.
  if (wildcard && !name.includes(".")) throw bad("wildcards a whole top-level domain");
  return { text, wildcard, name, ...(port !== undefined ? { port } : {}) };
}

function canonicalName(hostname: string): string {
  const lower = hostname.toLowerCase();
  return lower.endsWith(".") ? lower.slice(0, -1) : lower;
}

/**
 * The egress guard: a `fetch` for every outbound call to a foreign agent, injectable wherever a `typeof fetch` goes
 * (the A2A SDK's card resolver and transports).
 *
 * In order, before any byte leaves: the scheme must be http or https and the URL carry no credentials; the host must
 * be on the agent's allowlist; the name is resolved ONCE and every address it resolves to must be ordinary public
 * unicast or admitted by an operator CIDR; then the socket connects to the first checked address (never to a fresh
 * DNS answer, so rebinding cannot swap the peer), with the name kept as Host header and TLS servername.
 *
 * After: redirects are refused, not followed; 429/502/503/504 become transient errors (unless turned off), other
 * statuses come back as an ordinary Response. The body is read in full under `maxResponseBytes` and the total
 * deadline — unless `streamEventStreams` is set: then a 2xx `text/event-stream` answer is handed on as it arrives
 * (MCP's Streamable HTTP answers a tool call as an SSE stream, with progress notifications on the way), the size cap
 * and the total deadline still covering the whole body. A2A uses push notifications and reads every answer whole.
 */
import { lookup } from "node:dns/promises";
import { Readable } from "node:stream";
import type { OutgoingHttpHeaders } from "node:http";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { checkAddress, type AddressVerdict } from "./address-policy.js";
import { startCallDeadline, raceSignal } from "./call-deadline.js";
import { CidrSet, normalizeIp } from "./cidr.js";
import { EgressReason, egressError, isTransientSocketCode, isTransientStatus, retryAfterMs } from "./egress-errors.js";
import { HostAllowlist } from "./host-allowlist.js";
import { sendPinned, type PinnedResponse } from "./pinned-request.js";

/** Resolves a host name to IP addresses (all of them; every one is checked). */
export type EgressResolver = (hostname: string) => Promise<string[]>;

export interface GuardedFetchOptions {
  /** The agent's allowlist: exact hosts or IPs, or `*.example.com`, each optionally with `:port`. Empty refuses all. */
  allowHosts: readonly string[];
  /**
   * Operator CIDRs (`SWITCHYARD_EGRESS_ALLOWED_NETWORKS`) admitting otherwise refused unicast ranges, e.g.
   * `127.0.0.0/8` for agents on loopback in tests. Default: none.
   */
  allowedNetworks?: readonly string[];
  /** Name resolution, TCP and TLS handshake must finish within this (ms). */
  connectTimeoutMs: number;
  /** The whole call, response body included, must finish within this (ms). */
  totalTimeoutMs: number;
  /** A later end the caller may still move while a call runs (ms since epoch; see call-deadline.ts). @defaultValue none */
  totalUntil?: () => number;
  /** Largest response body accepted (bytes, decoded). */
  maxResponseBytes: number;
  /** @defaultValue every address of `dns.promises.lookup(host, { all: true })` */
  resolver?: EgressResolver;
  /** Aborts every call of this fetch (e.g. shutdown); combined with each call's own signal. */
  signal?: AbortSignal;
  /** Trust anchors for https, replacing Node's default CA store (tests, private CAs). */
  ca?: string | Buffer | Array<string | Buffer>;
  /**
   * Reject 429/502/503/504 with a transient `EGRESS_TRANSIENT_STATUS` error instead of returning the Response, so
   * retries and the breaker see them even through a client library that turns statuses into untyped errors.
   * @defaultValue true
   */
  transientStatusAsError?: boolean;
  /** Stream 2xx `text/event-stream` response bodies instead of reading them whole (see the module comment). @defaultValue false */
  streamEventStreams?: boolean;
}

export const defaultEgressResolver: EgressResolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => a.address);
};

// Headers that describe the connection rather than the request; node:http writes its own.
const CONNECTION_HEADERS = new Set(["host", "connection", "keep-alive", "content-length", "transfer-encoding", "upgrade", "te", "trailer"]);
// Statuses whose Response must not have a body.
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

export function createGuardedFetch(options: GuardedFetchOptions): typeof fetch {
  for (const key of ["connectTimeoutMs", "totalTimeoutMs", "maxResponseBytes"] as const) {
    const value = options[key];
    if (!Number.isFinite(value) || value <= 0) {
      throw new SwitchyardError(ErrorCode.InvalidArgument, `${key} must be a positive number, got ${value}`, { details: { path: key } });
    }
  }
  const allowlist = new HostAllowlist(options.allowHosts);
  const admitted = new CidrSet(options.allowedNetworks ?? [], ErrorCode.Config);
  const resolver = options.resolver ?? defaultEgressResolver;
  const transientStatusAsError = options.transientStatusAsError ?? true;

  const guardedFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = checkUrl(input, allowlist);
    let request: Request;
    try {
      request = new Request(input instanceof Request ? input : url, init);
    } catch (error) {
      throw unusableRequest(url, error);
    }
    const deadline = startCallDeadline({
      connectTimeoutMs: options.connectTimeoutMs,
      totalTimeoutMs: options.totalTimeoutMs,
      ...(options.totalUntil ? { totalUntil: options.totalUntil } : {}),
      signals: [request.signal, options.signal],
      target: url.host,
    });
    // A streamed body keeps the deadline (and its size cap) until the body ends; anything else releases it on return.
    let streamed = false;
    try {
      if (deadline.signal.aborted) throw deadline.signal.reason;
      const body = request.body === null ? undefined : await raceSignal(readBody(request, url), deadline.signal);
      const addresses = await resolveOnce(url.hostname, resolver, deadline.signal);
      const pinned = admitAll(url.host, addresses, admitted);
      const raw = await sendPinned({
        url,
        address: pinned,
        method: request.method,
        headers: outgoingHeaders(request.headers),
        ...(body === undefined ? {} : { body }),
        maxResponseBytes: options.maxResponseBytes,
        signal: deadline.signal,
        onConnected: deadline.connected,
        ...(options.ca === undefined ? {} : { ca: options.ca }),
        ...(options.streamEventStreams ? { stream: isEventStream, onStreamEnd: () => deadline.dispose() } : {}),
      });
      streamed = raw.body instanceof Readable;
      try {
        return toResponse(url, raw, request.method, transientStatusAsError);
      } catch (error) {
        if (raw.body instanceof Readable) raw.body.destroy();
        throw error;
      }
    } finally {
      if (!streamed) deadline.dispose();
    }
  };
  return guardedFetch as typeof fetch;
}

async function readBody(request: Request, url: URL): Promise<Uint8Array> {
  try {
    return new Uint8Array(await request.arrayBuffer());
  } catch (error) {
    throw unusableRequest(url, error);
  }
}

function unusableRequest(url: URL, error: unknown): SwitchyardError {
  const message = `egress to ${url.host}: unusable request: ${(error as Error).message}`;
  return egressError(ErrorCode.InvalidArgument, message, { reason: EgressReason.UrlInvalid, transient: false }, error);
}

/** Scheme, credentials and allowlist: the checks that need nothing but the URL. */
function checkUrl(input: string | URL | Request, allowlist: HostAllowlist): URL {
  let url: URL;
  try {
    url = new URL(input instanceof Request ? input.url : String(input));
  } catch (error) {
    throw egressError(ErrorCode.InvalidArgument, `egress refused: not a URL: ${JSON.stringify(String(input)).slice(0, 200)}`, { reason: EgressReason.UrlInvalid, transient: false }, error);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw egressError(ErrorCode.PolicyDenied, `egress refused: scheme ${url.protocol} is not allowed (http and https only)`, {
      reason: EgressReason.SchemeNotAllowed,
      transient: false,
      scheme: url.protocol,
    });
  }
  if (url.username !== "" || url.password !== "") {
    throw egressError(ErrorCode.PolicyDenied, `egress refused: the URL for ${url.host} carries credentials`, { reason: EgressReason.UrlCredentials, transient: false, host: url.host });
  }
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
  if (!allowlist.allows(url.hostname, port)) {
    throw egressError(ErrorCode.PolicyDenied, `egress refused: host ${url.host} is not on the agent's allowlist`, {
      reason: EgressReason.HostNotAllowed,
      transient: false,
      host: url.host,
      allowHosts: allowlist.entries,
    });
  }
  return url;
}

/** IP literals are their own answer: the resolver is not asked. */
async function resolveOnce(hostname: string, resolver: EgressResolver, signal: AbortSignal): Promise<string[]> {
  const literal = normalizeIp(hostname);
  if (literal !== undefined) return [literal.address];
  let addresses: string[];
  try {
    addresses = await raceSignal(resolver(hostname), signal);
  } catch (error) {
    if (signal.aborted && error === signal.reason) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    throw egressError(ErrorCode.Unavailable, `egress to ${hostname}: name resolution failed: ${(error as Error).message}`, {
      reason: EgressReason.DnsFailed,
      transient: isTransientSocketCode(code),
      host: hostname,
      ...(code ? { errorCode: code } : {}),
    }, error);
  }
  if (!Array.isArray(addresses) || addresses.length === 0) {
    throw egressError(ErrorCode.Unavailable, `egress to ${hostname}: name resolved to no address`, { reason: EgressReason.DnsFailed, transient: false, host: hostname });
  }
  return addresses;
}

/** Every address must pass (a mixed answer is refused whole); the first one is the one we connect to. */
function admitAll(host: string, addresses: readonly string[], admitted: CidrSet): { address: string; family: 4 | 6 } {
  const verdicts = addresses.map((a) => checkAddress(a, admitted));
  const refused = verdicts.find((v): v is Extract<AddressVerdict, { allowed: false }> => !v.allowed);
  if (refused !== undefined) {
    const embedded = refused.embeddedIn ? ` (embedded in a ${refused.embeddedIn} address)` : "";
    const hint = refused.admissible ? "; an operator may admit it with SWITCHYARD_EGRESS_ALLOWED_NETWORKS" : "";
    throw egressError(ErrorCode.PolicyDenied, `egress refused: ${host} is at ${refused.address}, a ${refused.range} address${embedded}${hint}`, {
      reason: EgressReason.AddressBlocked,
      transient: false,
      host,
      address: refused.address,
      range: refused.range,
    });
  }
  const first = verdicts[0]!;
  return { address: first.address, family: first.family };
}

function outgoingHeaders(headers: Headers): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  headers.forEach((value, name) => {
    if (!CONNECTION_HEADERS.has(name)) out[name] = value;
  });
  // Ask for an uncompressed body so the size cap is on the bytes we store (compressed answers are decoded anyway).
  out["accept-encoding"] ??= "identity";
  out["user-agent"] ??= "switchyard-egress";
  return out;
}

function isEventStream(res: { headers: Record<string, string | string[] | undefined> }): boolean {
  const type = res.headers["content-type"];
  return typeof type === "string" && type.split(";")[0]!.trim().toLowerCase() === "text/event-stream";
}

function toResponse(url: URL, raw: PinnedResponse, method: string, transientStatusAsError: boolean): Response {
  const header = (name: string) => raw.headers.find(([n]) => n.toLowerCase() === name)?.[1];
  if (raw.status >= 300 && raw.status < 400 && raw.status !== 304) {
    const location = header("location");
    throw egressError(ErrorCode.PolicyDenied, `egress refused: ${url.host} answered ${raw.status} redirect${location ? ` to ${location.slice(0, 200)}` : ""}; redirects are not followed`, {
      reason: EgressReason.Redirect,
      transient: false,
      status: raw.status,
      ...(location ? { location: location.slice(0, 2048) } : {}),
    });
  }
  if (transientStatusAsError && isTransientStatus(raw.status)) {
    const after = retryAfterMs(header("retry-after"));
    throw egressError(ErrorCode.Unavailable, `egress to ${url.host}: answered ${raw.status} ${raw.statusText}`.trimEnd(), {
      reason: EgressReason.TransientStatus,
      transient: true,
      status: raw.status,
      ...(after === undefined ? {} : { retryAfterMs: after }),
    });
  }
  const headers = new Headers();
  for (const [name, value] of raw.headers) {
    try {
      headers.append(name, value);
    } catch {
      // A header the Fetch standard cannot hold is dropped rather than failing an otherwise good answer.
    }
  }
  const nullBody = NULL_BODY_STATUSES.has(raw.status) || method === "HEAD";
  let response: Response;
  try {
    const body = nullBody ? null : raw.body instanceof Readable ? (Readable.toWeb(raw.body) as ReadableStream<Uint8Array>) : raw.body;
    response = new Response(body, { status: raw.status, statusText: raw.statusText, headers });
  } catch (error) {
    throw egressError(ErrorCode.Unavailable, `egress to ${url.host}: unusable response (status ${raw.status})`, { reason: EgressReason.InvalidResponse, transient: false, status: raw.status }, error);
  }
  // A constructed Response has an empty url; callers resolving relative links expect the request's.
  Object.defineProperty(response, "url", { value: url.href });
  return response;
}

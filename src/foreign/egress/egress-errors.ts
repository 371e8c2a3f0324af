/**
 * The failures of an outbound foreign call, as SwitchyardErrors with a stable `details.reason` and a `details.transient`
 * flag. Retries and the circuit breaker decide on that flag alone, so every error made here sets it.
 *
 * Transient: timeouts, refused/reset connections, DNS hiccups, and 429/502/503/504 answers.
 * Not transient: every policy refusal (scheme, host, address, redirect), oversize responses, TLS failures, 4xx.
 */
import { ErrorCode, SwitchyardError } from "../../errors.js";

export const EgressReason = {
  UrlInvalid: "EGRESS_URL_INVALID",
  SchemeNotAllowed: "EGRESS_SCHEME_NOT_ALLOWED",
  UrlCredentials: "EGRESS_URL_CREDENTIALS",
  HostNotAllowed: "EGRESS_HOST_NOT_ALLOWED",
  AddressBlocked: "EGRESS_ADDRESS_BLOCKED",
  DnsFailed: "EGRESS_DNS_FAILED",
  Redirect: "EGRESS_REDIRECT",
  ConnectTimeout: "EGRESS_CONNECT_TIMEOUT",
  TotalTimeout: "EGRESS_TOTAL_TIMEOUT",
  ConnectionFailed: "EGRESS_CONNECTION_FAILED",
  InvalidResponse: "EGRESS_INVALID_RESPONSE",
  ResponseTooLarge: "EGRESS_RESPONSE_TOO_LARGE",
  TransientStatus: "EGRESS_TRANSIENT_STATUS",
  Cancelled: "EGRESS_CANCELLED",
  BreakerOpen: "BREAKER_OPEN",
} as const;
export type EgressReason = (typeof EgressReason)[keyof typeof EgressReason];

/** HTTP answers worth trying again later. */
export const TRANSIENT_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

// Socket and resolver codes that describe a passing condition of the network or the peer rather than a fault
// that repeating the call cannot fix.
const TRANSIENT_SOCKET_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN",
  "ESERVFAIL",
  "ETIMEOUT",
  "UND_ERR_SOCKET",
]);

export interface EgressErrorDetails {
  reason: EgressReason;
  transient: boolean;
  [key: string]: unknown;
}

export function egressError(code: ErrorCode, message: string, details: EgressErrorDetails, cause?: unknown): SwitchyardError {
  return new SwitchyardError(code, message, { details: { ...details }, ...(cause === undefined ? {} : { cause }) });
}

/** True for the socket/resolver error codes listed above. */
export function isTransientSocketCode(code: unknown): boolean {
  return typeof code === "string" && TRANSIENT_SOCKET_CODES.has(code);
}

export function isTransientStatus(status: number): boolean {
  return TRANSIENT_STATUSES.has(status);
}

/**
 * Whether repeating the call may succeed: a SwitchyardError's `details.transient`, or a transient socket code on a
 * raw error, looked up along the `cause` chain (libraries such as the A2A SDK may wrap what our fetch threw).
 */
export function isTransientFailure(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current instanceof SwitchyardError) {
      if (typeof current.details.transient === "boolean") return current.details.transient;
    } else if (isTransientSocketCode((current as NodeJS.ErrnoException).code)) {
      return true;
    }
    current = current.cause;
  }
  return false;
}

/** `Retry-After` (seconds or an HTTP date) in milliseconds, when present and sane. */
export function retryAfterMs(header: string | null | undefined, now: number = Date.now()): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

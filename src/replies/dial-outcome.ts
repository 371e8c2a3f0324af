/**
 * What one dial of an origin reply came to, and how failures are sorted into it. The one question behind every
 * branch: can the provider have seen the request? None of these providers takes an idempotency key, so a request
 * that may have been written is never sent again (`unknown`); only a connection that failed before any byte of the
 * request left, or an explicit 429, is dialed again later (`retry`).
 */
import { SwitchyardError } from "../errors.js";
import { EgressReason, retryAfterMs } from "../foreign/egress/index.js";

export type DialOutcome =
  /** The provider accepted the post. `providerId`: the comment id, or the Slack message ts. */
  | { outcome: "sent"; providerId: string; permalink: string | null }
  /** Nothing can have been posted and it may pass: dial again (after `retryAfterMs` when the provider said). */
  | { outcome: "retry"; code: "connect_failed" | "provider_rate_limited"; message: string; retryAfterMs?: number }
  /** Nothing was posted and repeating would not change that. */
  | { outcome: "failed"; code: string; message: string }
  /** The request may have been written and we do not know what came of it: never dialed again. */
  | { outcome: "unknown"; code: string; message: string };

/** A provider's HTTP answer that was not a success, in the shape every adapter can produce. */
export interface ProviderAnswer {
  status: number;
  headers: { get(name: string): string | null };
  /** The provider's own error text (GitHub/Gitea `message`, Slack/Cairn `error`), or a slice of the body. */
  errorText: string;
}

const EGRESS_REFUSED: ReadonlySet<string> = new Set([
  EgressReason.UrlInvalid,
  EgressReason.SchemeNotAllowed,
  EgressReason.UrlCredentials,
  EgressReason.HostNotAllowed,
  EgressReason.AddressBlocked,
]);
/** Socket errors raised while connecting: the request cannot have been written. */
const NOT_CONNECTED_CODES: ReadonlySet<string> = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "ENETDOWN", "ENOTFOUND", "EAI_AGAIN", "EADDRNOTAVAIL"]);

/** The egress guard's error somewhere in `error`'s cause chain (client libraries such as Octokit wrap it). */
export function egressCause(error: unknown): SwitchyardError | undefined {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof SwitchyardError && typeof e.details.reason === "string") return e;
  }
  return undefined;
}

/** A failure thrown by the guarded fetch (or a client around it), sorted by whether the request can have left. */
export function classifyThrown(error: unknown): DialOutcome {
  const egress = egressCause(error);
  const message = egress?.message ?? (error instanceof Error ? error.message : String(error));
  const reason = egress?.details.reason;
  if (typeof reason === "string" && EGRESS_REFUSED.has(reason)) return { outcome: "failed", code: "egress_refused", message };
  if (reason === EgressReason.Redirect) return { outcome: "failed", code: "provider_rejected", message };
  if (reason === EgressReason.DnsFailed || reason === EgressReason.ConnectTimeout) return { outcome: "retry", code: "connect_failed", message };
  if (reason === EgressReason.ConnectionFailed && NOT_CONNECTED_CODES.has(String(egress?.details.errorCode))) {
    return { outcome: "retry", code: "connect_failed", message };
  }
  if (reason === EgressReason.TotalTimeout) return { outcome: "unknown", code: "timeout", message };
  if (reason === EgressReason.ConnectionFailed) return { outcome: "unknown", code: "connection_lost", message };
  if (reason === EgressReason.ResponseTooLarge || reason === EgressReason.InvalidResponse) return { outcome: "unknown", code: "invalid_response", message };
  if (reason === EgressReason.Cancelled) return { outcome: "unknown", code: "cancelled", message };
  return { outcome: "unknown", code: "dial_error", message };
}

export interface AnswerOptions {
  /** Provider name for messages ("github"). */
  provider: string;
  now: number;
  /** Longest wait a `Retry-After` may ask for (ms). */
  maxRetryAfterMs: number;
}

/** A non-2xx answer: 429 → retry (honouring Retry-After), other 4xx → failed, 5xx and the rest → unknown. */
export function classifyAnswer(answer: ProviderAnswer, options: AnswerOptions): DialOutcome {
  const text = answer.errorText ? `: ${answer.errorText}` : "";
  const message = `${options.provider} answered HTTP ${answer.status}${text}`;
  if (answer.status === 429 || isForgeRateLimit(answer)) {
    const after = retryAfter(answer, options);
    return { outcome: "retry", code: "provider_rate_limited", message, ...(after === undefined ? {} : { retryAfterMs: after }) };
  }
  if (answer.status >= 400 && answer.status < 500) return { outcome: "failed", code: "provider_rejected", message };
  if (answer.status >= 500) return { outcome: "unknown", code: "provider_error", message };
  return { outcome: "unknown", code: "invalid_response", message };
}

/**
 * GitHub (and Gitea behind some proxies) say "rate limited" with a 403: a secondary limit carries `Retry-After`,
 * the primary one `x-ratelimit-remaining: 0`. A plain 403 (no permission) is a rejection.
 */
function isForgeRateLimit(answer: ProviderAnswer): boolean {
  return answer.status === 403 && (answer.headers.get("retry-after") !== null || answer.headers.get("x-ratelimit-remaining") === "0");
}

function retryAfter(answer: ProviderAnswer, options: AnswerOptions): number | undefined {
  let ms = retryAfterMs(answer.headers.get("retry-after"), options.now);
  const reset = answer.headers.get("x-ratelimit-reset");
  if (ms === undefined && reset !== null && /^\d+$/.test(reset)) ms = Math.max(0, Number(reset) * 1000 - options.now);
  return ms === undefined ? undefined : Math.min(ms, options.maxRetryAfterMs);
}

/** The provider's error text out of a JSON or plain body, one line, at most 300 characters. */
export function providerErrorText(body: string): string {
  let text = body;
  try {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    const field = [parsed.message, parsed.error, parsed.error_description].find((v) => typeof v === "string");
    if (typeof field === "string") text = field;
  } catch {
    // not JSON: the body itself
  }
  return text.replace(/\s+/g, " ").trim().slice(0, 300);
}

/**
 * A message safe to store and log: the secret removed wherever it appears (a provider might echo a header back),
 * capped in length.
 */
export function redact(message: string, secret: string): string {
  const cleaned = secret.length >= 4 ? message.split(secret).join("[redacted]") : message;
  return cleaned.slice(0, 1000);
}

/**
 * The port every reply provider adapter implements: post one text to one address with one connection's credential,
 * through the guarded fetch it is given, and say what came of it (never throw for a provider's answer).
 *
 * The credential goes only to `apiBaseUrl`; the address contributes path components alone (each already checked
 * against a strict charset by validateAddress, and still percent-encoded here).
 */
import type { ConnectionKind, ReplyAddress } from "../../core/reply-address.js";
import { classifyAnswer, classifyThrown, providerErrorText, type DialOutcome } from "../dial-outcome.js";

export interface ProviderPost {
  address: ReplyAddress;
  text: string;
  /** The connection's API base URL (`https://api.github.com`, `https://gitea.example/api/v1`, `https://slack.com/api`, the Cairn origin). */
  apiBaseUrl: string;
  /** The connection's secret, opened for this one call. */
  secret: string;
  /** The egress guard, admitting only the API base URL's host. */
  fetch: typeof fetch;
  signal?: AbortSignal;
  now: () => number;
  maxRetryAfterMs: number;
}

/** What a Slack post teaches about our own identity there (for echo suppression). */
export interface LearntIdentity {
  botId?: string;
  appId?: string;
}

export type ProviderResult = DialOutcome & {
  learnt?: LearntIdentity;
  /**
   * A `sent` whose permalink takes a second call (Slack): the sender writes the outcome and the learnt identity
   * first, so the echo of the post is recognised as soon as possible, then calls this (best effort, never throws).
   */
  lookupPermalink?: () => Promise<string | null>;
};

export interface ReplyProvider {
  kind: ConnectionKind;
  /** The provider's own limit on a post's text, in characters (UTF-16 code units, which never under-counts). */
  maxTextChars: number;
  post(request: ProviderPost): Promise<ProviderResult>;
}

/** `base` + `/a/b`, with the base's own path kept (`/api/v1`) and no doubled slash. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}${path}`;
}

export const enc = encodeURIComponent;

/** `owner/name` as two encoded path components. */
export function repositoryPath(repository: string): string {
  const [owner, name] = repository.split("/");
  return `${enc(owner ?? "")}/${enc(name ?? "")}`;
}

/**
 * One JSON POST through the guarded fetch; a non-2xx answer or a thrown failure is already a DialOutcome, a 2xx is
 * the parsed body (or `unknown` when it is not JSON: the post probably happened, we cannot tell its id).
 */
export async function postJson(
  request: ProviderPost,
  provider: string,
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<{ ok: true; data: Record<string, unknown>; headers: Headers } | { ok: false; outcome: DialOutcome }> {
  let response: Response;
  try {
    response = await request.fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8", accept: "application/json", ...headers },
      body: JSON.stringify(body),
      ...(request.signal ? { signal: request.signal } : {}),
    });
  } catch (error) {
    return { ok: false, outcome: classifyThrown(error) };
  }
  const text = await response.text().catch(() => "");
  if (response.status < 200 || response.status >= 300) {
    return {
      ok: false,
      outcome: classifyAnswer(
        { status: response.status, headers: response.headers, errorText: providerErrorText(text) },
        { provider, now: request.now(), maxRetryAfterMs: request.maxRetryAfterMs },
      ),
    };
  }
  try {
    const data = JSON.parse(text) as unknown;
    if (typeof data === "object" && data !== null && !Array.isArray(data)) return { ok: true, data: data as Record<string, unknown>, headers: response.headers };
  } catch {
    // fall through
  }
  return { ok: false, outcome: { outcome: "unknown", code: "invalid_response", message: `${provider} answered HTTP ${response.status} with a body that is not a JSON object` } };
}

/** A success whose body lacks the id we need: the post most likely exists, but we cannot name it. */
export function missingId(provider: string, field: string): DialOutcome {
  return { outcome: "unknown", code: "invalid_response", message: `${provider} answered success without ${field}` };
}

export function idText(value: unknown): string | undefined {
  if (typeof value === "number" && Number.isSafeInteger(value)) return String(value);
  if (typeof value === "string" && value !== "") return value;
  return undefined;
}

export function stringOrNull(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}

/**
 * The two secrets that guard the A2A callback route, both derived from the tenant's link keys
 * (src/store/approvals/approval-store.ts, LinkKeyStore), so rotating and retiring keys works as for approval links:
 *
 * - the URL token `t`: `base64url(JSON {b: bridge id, o: tenant, e: expiry ms, k: kid}) "." base64url(HMAC-SHA256)`
 *   (MAC over a purpose prefix and the payload);
 *   verified in constant time against the tenant's key `k` (not retired), the bridge and tenant it names and its expiry;
 * - the notification token the agent echoes (`X-A2A-Notification-Token` / `Authorization: Bearer`): a per-bridge
 *   secret `HMAC(key, "switchyard/a2a-notify\0" + bridge id)`. Only its sha256 is stored on the bridge; re-deriving it lets the
 *   post-commit sender (in any coordinator) hand it to the agent without a plaintext secret at rest.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { Queryable } from "../store/db.js";
import type { LinkKey, LinkKeyStore } from "../store/approvals/approval-store.js";

export interface CallbackClaims {
  bridgeId: string;
  orgId: string;
  expiresAtMs: number;
  kid: string;
}

export type CallbackRefusal = "malformed" | "forged" | "expired" | "unknown_key" | "retired_key" | "wrong_bridge";

export class CallbackTokenError extends Error {
  constructor(readonly refusal: CallbackRefusal, message: string) {
    super(message);
  }
}

const MAX_TOKEN_LENGTH = 1024;
const BASE64URL_RE = /^[A-Za-z0-9_-]+$/;

/** Domain separation from the other uses of the tenant's link key (approval links, notification secrets). */
const PURPOSE = "switchyard/a2a-callback\u0000";

function mac(secret: Buffer, payload: string): Buffer {
  return createHmac("sha256", secret).update(PURPOSE).update(payload).digest();
}

export function signCallbackToken(key: { kid: string; secret: Buffer }, claims: Omit<CallbackClaims, "kid">): string {
  const payload = Buffer.from(JSON.stringify({ b: claims.bridgeId, o: claims.orgId, e: claims.expiresAtMs, k: key.kid })).toString("base64url");
  return `${payload}.${mac(key.secret, payload).toString("base64url")}`;
}

/** The per-bridge notification secret the agent must echo. */
export function notificationSecret(key: { secret: Buffer }, bridgeId: string): string {
  return createHmac("sha256", key.secret).update(`switchyard/a2a-notify\u0000${bridgeId}`).digest("base64url");
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** Constant-time comparison of a presented notification token with the stored hash. */
export function notificationTokenMatches(presented: string | undefined, storedHash: string): boolean {
  if (!presented) return false;
  const a = Buffer.from(sha256Hex(presented), "hex");
  const b = Buffer.from(storedHash, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}

function decode(text: string): Buffer | undefined {
  if (!BASE64URL_RE.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64url");
  return bytes.toString("base64url") === text ? bytes : undefined;
}

/** A URL token split and decoded, not yet verified: its kid names the key to verify it with. */
export interface ParsedCallbackToken {
  payload: string;
  signature: Buffer;
  claims: CallbackClaims;
}

/** Splits and decodes a URL token; throws a CallbackTokenError ("malformed") when it cannot be read. */
export function parseCallbackToken(token: string | null): ParsedCallbackToken {
  if (!token || token.length > MAX_TOKEN_LENGTH) throw new CallbackTokenError("malformed", "the callback URL has no usable token");
  const [payload, signature, extra] = token.split(".");
  if (!payload || !signature || extra !== undefined) throw new CallbackTokenError("malformed", "the callback token is malformed");
  const payloadBytes = decode(payload);
  const sig = decode(signature);
  if (!payloadBytes || !sig) throw new CallbackTokenError("malformed", "the callback token is malformed");
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(payloadBytes.toString("utf8")) as Record<string, unknown>;
  } catch {
    throw new CallbackTokenError("malformed", "the callback token is malformed");
  }
  if (typeof raw !== "object" || raw === null) throw new CallbackTokenError("malformed", "the callback token is malformed");
  const claims: CallbackClaims = { bridgeId: String(raw.b ?? ""), orgId: String(raw.o ?? ""), expiresAtMs: Number(raw.e), kid: String(raw.k ?? "") };
  if (!Number.isFinite(claims.expiresAtMs) || claims.kid === "") throw new CallbackTokenError("malformed", "the callback token is malformed");
  return { payload, signature: sig, claims };
}

/**
 * Checks a parsed token for `bridge` (its id and tenant come from our own row, never from the token) with `key`,
 * the tenant's link key named by the token's kid (undefined when the tenant has none of that name). Throws a
 * CallbackTokenError naming why it was refused.
 */
export function checkCallbackToken(
  token: ParsedCallbackToken,
  bridge: { id: string; orgId: string },
  key: Pick<LinkKey, "secret" | "retiredAt"> | undefined,
  nowMs: number,
): CallbackClaims {
  const { claims } = token;
  // The bridge decides the tenant: a token of another tenant or bridge never authorises this one.
  if (claims.bridgeId !== bridge.id || claims.orgId !== bridge.orgId) throw new CallbackTokenError("wrong_bridge", "the callback token does not belong to this callback");
  if (!key) throw new CallbackTokenError("unknown_key", "the callback token was signed with an unknown key");
  const expected = mac(key.secret, token.payload);
  if (token.signature.length !== expected.length || !timingSafeEqual(token.signature, expected)) throw new CallbackTokenError("forged", "the callback token's signature does not verify");
  if (key.retiredAt !== null) throw new CallbackTokenError("retired_key", "the callback token's key was retired");
  if (claims.expiresAtMs <= nowMs) throw new CallbackTokenError("expired", "the callback token has expired");
  return claims;
}

/** Parses and checks a URL token, reading the tenant's key through `linkKeys` on `db`. */
export async function verifyCallbackToken(
  linkKeys: Pick<LinkKeyStore, "get">,
  db: Queryable,
  token: string | null,
  bridge: { id: string; orgId: string },
  nowMs: number,
): Promise<CallbackClaims> {
  const parsed = parseCallbackToken(token);
  const key = parsed.claims.bridgeId === bridge.id && parsed.claims.orgId === bridge.orgId ? await linkKeys.get(db, bridge.orgId, parsed.claims.kid) : undefined;
  return checkCallbackToken(parsed, bridge, key, nowMs);
}

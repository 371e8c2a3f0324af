/**
 * Signed one-click approval links. A token is `base64url(JSON claims) "." base64url(HMAC-SHA256(key, purpose + payload))`
 * where the claims are `{a: approval id, d: "approve" | "deny", e: expiry ms, k: key id, o: tenant}` and the key
 * is the tenant's link key `k` (the LinkKeyStore of src/store/approvals/approval-store.ts). Verification recomputes the MAC in constant time,
 * refuses unknown or retired keys and expired links; the approval must belong to the token's tenant.
 *
 * Redeeming decides the approval through `TaskService.decideApproval` (actor `link:<kid>`, via `link`) and records
 * the token's hash in `used_link_tokens` in the same transaction, so a link works once: using it again — or
 * using any link after the approval was decided by any route — answers with the first outcome and changes nothing.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { DecideApprovalOutcome } from "../tasks/tasks.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { ApprovalStore, LinkKeyStore, UsedLinkTokenStore } from "../store/approvals/approval-store.js";
import type { Queryable } from "../store/db.js";
import type { ApprovalDecider } from "./expiry.js";

/** The stores signed links read and write (`runtime.stores` has them all). */
export interface LinkStores {
  approvals: Pick<ApprovalStore, "get">;
  linkKeys: Pick<LinkKeyStore, "ensure" | "get">;
  linkTokens: UsedLinkTokenStore;
}

/** Where the gateway serves approval links (src/approvals/link-route.ts). */
export const APPROVAL_LINK_PATH = "/approvals/decide";
/** How long a link works at most; never past its approval's own deadline. @defaultValue 24 hours */
export const DEFAULT_LINK_TTL_MS = 24 * 60 * 60 * 1000;

export type LinkDecision = "approve" | "deny";

export interface LinkClaims {
  approvalId: string;
  decision: LinkDecision;
  expiresAtMs: number;
  kid: string;
  orgId: string;
}

/**
 * Why a token was refused. `malformed` is the caller's mistake (HTTP 400); the others mean the link does not
 * authorise anything (HTTP 401). Carried in the error's `details.refusal`.
 */
export type LinkRefusal = "malformed" | "unknown_key" | "retired_key" | "forged" | "expired";

const MAX_TOKEN_LENGTH = 2048;
const BASE64URL_RE = /^[A-Za-z0-9_-]+$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ORG_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const KID_RE = /^[A-Za-z0-9_-]{1,64}$/;

function refuse(refusal: LinkRefusal, message: string): SwitchyardError {
  // Until errors.ts has an UNAUTHENTICATED code every refusal is INVALID_ARGUMENT; details.refusal tells them apart.
  return new SwitchyardError(ErrorCode.InvalidArgument, message, { details: { refusal } });
}

/** The refusal reason of an error thrown by verification, or undefined for any other error. */
export function linkRefusalOf(error: unknown): LinkRefusal | undefined {
  if (!(error instanceof SwitchyardError)) return undefined;
  return error.details.refusal as LinkRefusal | undefined;
}

/**
 * The tenant's link key also signs A2A callback tokens and notification secrets (src/foreign/callback-token.ts):
 * each use MACs under its own purpose prefix, so no token of one kind can ever verify as another.
 */
const PURPOSE = "switchyard/approval-link\u0000";

function mac(secret: Buffer, payload: string): Buffer {
  return createHmac("sha256", secret).update(PURPOSE).update(payload).digest();
}

/** Signs claims with a key. Pure: the caller chose the key (normally the tenant's signing key). */
export function signLinkToken(key: { kid: string; secret: Buffer }, claims: Omit<LinkClaims, "kid">): string {
  const payload = Buffer.from(
    JSON.stringify({ a: claims.approvalId, d: claims.decision, e: claims.expiresAtMs, k: key.kid, o: claims.orgId }),
  ).toString("base64url");
  return `${payload}.${mac(key.secret, payload).toString("base64url")}`;
}

/** Strict base64url: re-encoding gives the same text, so one signature has exactly one spelling. */
function decodeCanonical(text: string): Buffer | undefined {
  if (!BASE64URL_RE.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64url");
  return bytes.toString("base64url") === text ? bytes : undefined;
}

/** Parses a token without checking its signature; throws `malformed` when it is not one of ours. */
export function parseLinkToken(token: string): LinkClaims & { payload: string; signature: Buffer } {
  const malformed = (why: string) => refuse("malformed", `the approval link is malformed: ${why}`);
  if (token.length === 0 || token.length > MAX_TOKEN_LENGTH) throw malformed("bad length");
  const parts = token.split(".");
  if (parts.length !== 2) throw malformed("expected two parts");
  const [payload, sig] = parts as [string, string];
  const payloadBytes = decodeCanonical(payload);
  const signature = decodeCanonical(sig);
  if (!payloadBytes || !signature) throw malformed("not base64url");
  let claims: unknown;
  try {
    claims = JSON.parse(payloadBytes.toString("utf8"));
  } catch {
    throw malformed("payload is not JSON");
  }
  const c = claims as Record<string, unknown>;
  if (
    typeof claims !== "object" ||
    claims === null ||
    typeof c.a !== "string" ||
    !UUID_RE.test(c.a) ||
    (c.d !== "approve" && c.d !== "deny") ||
    typeof c.e !== "number" ||
    !Number.isSafeInteger(c.e) ||
    typeof c.k !== "string" ||
    !KID_RE.test(c.k) ||
    typeof c.o !== "string" ||
    !ORG_RE.test(c.o)
  ) {
    throw malformed("unexpected claims");
  }
  return { approvalId: c.a, decision: c.d, expiresAtMs: c.e, kid: c.k, orgId: c.o, payload, signature };
}

/**
 * Verifies a token: the tenant's key `k` exists and is not retired, the MAC matches (constant time) and the
 * link has not expired. Returns the claims; throws a refusal otherwise. Reads only.
 */
export async function verifyLinkToken(linkKeys: Pick<LinkKeyStore, "get">, db: Queryable, token: string, nowMs: number): Promise<LinkClaims> {
  const parsed = parseLinkToken(token);
  const key = await linkKeys.get(db, parsed.orgId, parsed.kid);
  if (!key) throw refuse("unknown_key", "the approval link was signed with an unknown key");
  const expected = mac(key.secret, parsed.payload);
  // timingSafeEqual needs equal lengths; a length mismatch is no secret (every MAC here is 32 bytes).
  if (parsed.signature.length !== expected.length || !timingSafeEqual(parsed.signature, expected)) {
    throw refuse("forged", "the approval link's signature does not match");
  }
  if (key.retiredAt !== null) throw refuse("retired_key", "the approval link was signed with a retired key");
  if (parsed.expiresAtMs <= nowMs) throw refuse("expired", `the approval link expired at ${new Date(parsed.expiresAtMs).toISOString()}`);
  return { approvalId: parsed.approvalId, decision: parsed.decision, expiresAtMs: parsed.expiresAtMs, kid: parsed.kid, orgId: parsed.orgId };
}

export interface ApprovalLinks {
  approveUrl: string;
  denyUrl: string;
  /** When both links stop working: min(approval deadline, now + link TTL). ISO 8601. */
  expiresAt: string;
  /** The key that signed them. */
  kid: string;
}

/**
 * Signed approve and deny links for a pending approval of the tenant, under `baseUrl` (the gateway's public URL).
 * NOT_FOUND for an approval that is not the tenant's; FAILED_PRECONDITION when it is decided or past its deadline.
 */
export async function createApprovalLinks(
  stores: Pick<LinkStores, "approvals" | "linkKeys">,
  db: Queryable,
  request: { orgId: string; approvalId: string; baseUrl: string; ttlMs?: number; nowMs?: number },
): Promise<ApprovalLinks> {
  const base = parseBaseUrl(request.baseUrl);
  const now = request.nowMs ?? Date.now();
  const approvalId = request.approvalId.toLowerCase();
  const approval = UUID_RE.test(approvalId) ? await stores.approvals.get(db, request.orgId, approvalId) : undefined;
  if (!approval) throw new SwitchyardError(ErrorCode.NotFound, `no approval ${request.approvalId} for tenant ${request.orgId}`);
  if (approval.status !== "pending") {
    throw new SwitchyardError(ErrorCode.FailedPrecondition, `approval ${approvalId} is already ${approval.status} by ${approval.decidedBy ?? "unknown"}`);
  }
  const deadline = approval.expiresAt !== null ? Date.parse(approval.expiresAt) : Number.POSITIVE_INFINITY;
  if (deadline <= now) throw new SwitchyardError(ErrorCode.FailedPrecondition, `approval ${approvalId} expired at ${approval.expiresAt}`);
  const expiresAtMs = Math.min(deadline, now + (request.ttlMs ?? DEFAULT_LINK_TTL_MS));
  const key = await stores.linkKeys.ensure(db, request.orgId);
  const url = (decision: LinkDecision) =>
    `${base}${APPROVAL_LINK_PATH}?token=${signLinkToken(key, { approvalId, decision, expiresAtMs, orgId: request.orgId })}`;
  return { approveUrl: url("approve"), denyUrl: url("deny"), expiresAt: new Date(expiresAtMs).toISOString(), kid: key.kid };
}

function parseBaseUrl(text: string): string {
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `base URL is not a URL: ${JSON.stringify(text)}`, { details: { path: "baseUrl" } });
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `base URL must use http or https, got ${parsed.protocol}`, { details: { path: "baseUrl" } });
  }
  if (parsed.search || parsed.hash) throw new SwitchyardError(ErrorCode.InvalidArgument, "base URL must not have a query or fragment", { details: { path: "baseUrl" } });
  // Keeps a path prefix (a gateway behind /switchyard/) without doubling the slash.
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, "")}`;
}

export interface RedeemLinkDeps {
  /** Reads keys (link_keys is not visible to the tenant role): the owner's pool. */
  pool: Queryable;
  stores: LinkStores;
  /**
   * An operator (unscoped) task service, e.g. `runtime.tasks`: the token, not an API key, authorises the
   * decision, and `used_link_tokens` is written in the deciding transaction.
   */
  tasks: ApprovalDecider;
  /** @defaultValue Date.now */
  clock?: () => number;
}

export interface RedeemLinkOutcome extends DecideApprovalOutcome {
  approvalId: string;
  orgId: string;
  /** What this link asked for; `status` is what stands (the first decision, whoever made it). */
  decision: LinkDecision;
}

/** sha256 hex of a token: what `used_link_tokens` records, never the token itself. */
export function linkTokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** Verifies a link token and decides its approval once. Throws a refusal, or NOT_FOUND for an unknown approval. */
export async function redeemApprovalLink(deps: RedeemLinkDeps, token: string): Promise<RedeemLinkOutcome> {
  const claims = await verifyLinkToken(deps.stores.linkKeys, deps.pool, token, (deps.clock ?? Date.now)());
  const tokenHash = linkTokenHash(token);
  const link = { approvalId: claims.approvalId, orgId: claims.orgId, decision: claims.decision };
  if (await deps.stores.linkTokens.wasUsed(deps.pool, tokenHash)) {
    // Used before: it decided the approval then, so the approval's outcome is this link's first outcome.
    const approval = await deps.stores.approvals.get(deps.pool, claims.orgId, claims.approvalId);
    if (approval && approval.status !== "pending") return { ...link, status: approval.status, decidedBy: approval.decidedBy ?? "unknown", alreadyDecided: true };
  }
  const outcome = await deps.tasks.decideApproval({
    orgId: claims.orgId,
    approvalId: claims.approvalId,
    approve: claims.decision === "approve",
    actor: `link:${claims.kid}`,
    reason: `${claims.decision === "approve" ? "approved" : "denied"} by signed link`,
    via: "link",
    onDecided: (client) => deps.stores.linkTokens.record(client, { tokenHash, orgId: claims.orgId, subject: `approval:${claims.approvalId}` }),
  });
  return { ...outcome, ...link };
}

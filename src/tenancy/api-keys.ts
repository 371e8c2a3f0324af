/**
 * API keys: `sy_` + 32 random bytes in base64url. The key is shown once, at creation; only its sha256 hash is
 * stored (so a database leak yields no usable key) plus a short prefix to recognise it in listings. Tenant keys act
 * for one tenant; admin keys (SREs) for none. Revocation takes effect on the next request: keys are not cached.
 * The rows are read and written through the API keys port (store/tenancy/tenancy-store.ts), taken first.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Queryable } from "../store/db.js";
import type { ApiKeyKind, ApiKeyRecord, ApiKeyStore } from "../store/tenancy/tenancy-store.js";
import type { Principal } from "./principal.js";
import { validateOrgId } from "./tenants.js";

export const API_KEY_PREFIX = "sy_";
const KEY_RE = /^sy_[A-Za-z0-9_-]{43}$/;
/** `sy_` plus this many characters identify a key in listings (48 bits: unique enough to tell keys apart). */
const SHOWN_CHARS = 8;
const MAX_NAME_CHARS = 100;
/** `last_used_at` is written at most this often per key, so busy keys do not turn every request into a write. */
const TOUCH_EVERY_SECONDS = 60;

export type { ApiKeyKind, ApiKeyRecord } from "../store/tenancy/tenancy-store.js";

export interface NewApiKey {
  /** The key itself. Shown once; it cannot be recovered. */
  secret: string;
  key: ApiKeyRecord;
}

export function generateApiKeySecret(): string {
  return `${API_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
}

export function hashApiKey(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

export function apiKeyPrefix(secret: string): string {
  return secret.slice(0, API_KEY_PREFIX.length + SHOWN_CHARS);
}

export function looksLikeApiKey(text: string): boolean {
  return KEY_RE.test(text);
}

function validateKeyName(name: string | undefined): string {
  const trimmed = (name ?? "").trim();
  if (trimmed === "" || trimmed.length > MAX_NAME_CHARS) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `name: a key name must be 1 to ${MAX_NAME_CHARS} characters`, {
      details: { path: "name", reason: "is required" },
    });
  }
  return trimmed;
}

/**
 * Creates a key: a tenant key when `orgId` is given (NOT_FOUND when no such tenant), else an admin key.
 * Returns the secret once.
 */
export async function createApiKey(keys: Pick<ApiKeyStore, "insert">, db: Queryable, request: { kind: ApiKeyKind; orgId?: string | null; name: string }): Promise<NewApiKey> {
  const name = validateKeyName(request.name);
  let orgId: string | null = null;
  if (request.kind === "tenant") {
    orgId = validateOrgId(request.orgId ?? "", "org_id");
  } else if (request.orgId) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, "org_id: an admin key belongs to no tenant", { details: { path: "org_id" } });
  }
  const secret = generateApiKeySecret();
  try {
    const key = await keys.insert(db, { id: randomUUID(), orgId, kind: request.kind, name, keyHash: hashApiKey(secret), keyPrefix: apiKeyPrefix(secret) });
    return { secret, key };
  } catch (error) {
    // 23503 foreign_key_violation: the tenant row is missing.
    if ((error as { code?: string }).code === "23503") {
      throw new SwitchyardError(ErrorCode.NotFound, `no tenant ${orgId}; create it first with \`switchyard tenant create ${orgId}\``, {
        details: { path: "org_id", orgId },
      });
    }
    throw error;
  }
}

/** Revokes a key (idempotent: the first revocation time stays). NOT_FOUND for an unknown id. */
export async function revokeApiKey(keys: Pick<ApiKeyStore, "revoke">, db: Queryable, id: string): Promise<ApiKeyRecord> {
  if (!isUuid(id)) throw new SwitchyardError(ErrorCode.NotFound, `no API key ${id}`, { details: { path: "id" } });
  const key = await keys.revoke(db, id);
  if (!key) throw new SwitchyardError(ErrorCode.NotFound, `no API key ${id}`, { details: { path: "id" } });
  return key;
}

/** Keys of one tenant (or every key), oldest first. Never the secrets: they are not stored. */
export async function listApiKeys(keys: Pick<ApiKeyStore, "list">, db: Queryable, filter: { orgId?: string } = {}): Promise<ApiKeyRecord[]> {
  return keys.list(db, filter.orgId ?? null);
}

export type ApiKeyResolution = { status: "ok"; principal: Principal } | { status: "revoked"; prefix: string } | { status: "unknown" };

/**
 * Looks a presented key up by its hash (one statement, which also records the use at most once a minute).
 * Comparing hashes through the unique index leaks nothing useful by timing: an attacker would need a sha256
 * preimage to steer it.
 */
export async function resolveApiKey(keys: Pick<ApiKeyStore, "findByHashes">, db: Queryable, secret: string): Promise<ApiKeyResolution> {
  return (await resolveApiKeys(keys, db, [secret]))[0]!;
}

/**
 * `resolveApiKey` for several presented keys at once (the gateway groups the calls that arrive together): one
 * statement however many, one resolution per key, in order.
 */
export async function resolveApiKeys(keys: Pick<ApiKeyStore, "findByHashes">, db: Queryable, secrets: readonly string[]): Promise<ApiKeyResolution[]> {
  const hashOf = secrets.map((secret) => (looksLikeApiKey(secret) ? hashApiKey(secret) : undefined));
  const hashes = [...new Set(hashOf.filter((h) => h !== undefined))];
  const byHash = new Map<string, ApiKeyRecord>();
  if (hashes.length > 0) {
    for (const key of await keys.findByHashes(db, hashes, TOUCH_EVERY_SECONDS)) byHash.set(key.keyHash, key);
  }
  return hashOf.map((hash) => resolution(hash === undefined ? undefined : byHash.get(hash)));
}

function resolution(key: ApiKeyRecord | undefined): ApiKeyResolution {
  if (!key) return { status: "unknown" };
  if (key.revokedAt) return { status: "revoked", prefix: key.prefix };
  const identity = { keyId: key.id, keyName: key.name, keyPrefix: key.prefix };
  if (key.kind === "admin") return { status: "ok", principal: { kind: "admin", ...identity } };
  return { status: "ok", principal: { kind: "tenant", orgId: key.orgId!, ...identity } };
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function isUuid(text: string): boolean {
  return UUID_RE.test(text);
}

/**
 * Signed audit checkpoints: a tenant's chain head `{org_id, seq, hash, at_ms}` signed with an Ed25519 key and
 * stored in `audit_checkpoints`. A checkpoint makes a rewrite of the whole chain detectable: recomputing every
 * hash keeps the chain self-consistent, but not equal to a head signed before the rewrite.
 *
 * The signed bytes are the canonical JSON text, keys in this order, no spaces:
 * `{"v":1,"org_id":"acme","seq":42,"hash":"<64 hex>","at_ms":1714557600000}`; the signature is Ed25519 over
 * those UTF-8 bytes, base64. `at_ms` is when the head was signed.
 *
 * Exported checkpoints are JSON lines, one per checkpoint, carrying the public key so a copy kept elsewhere can
 * be checked without trusting the database's key table:
 * `{"org_id","seq","hash","at_ms","kid","signature","public_key"}` (public_key: SPKI PEM).
 */
import { createPublicKey, sign, verify, type KeyObject } from "node:crypto";
import { GENESIS_HASH } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { withTransaction, type Pool, type Queryable } from "../store/db.js";
import { createPostgresAuditStore } from "../store/audit/postgres-audit-store.js";
import { verifySegment } from "./audit-verify.js";
import type { ChainHead } from "./audit-hash.js";
import { checkpointPublicKeys, type SigningKey } from "./checkpoint-keys.js";

// Not behind a port yet (the signer still runs its own SQL here): it reads the chain through the audit adapter.
const auditChain = createPostgresAuditStore();

/** First key of the two-key advisory lock that keeps two signers of one tenant apart. */
const SIGN_LOCK_NAMESPACE = 0x5359_4350;
const CHECKPOINT_VERSION = 1;
const HASH_RE = /^[0-9a-f]{64}$/;

export interface CheckpointHead {
  orgId: string;
  seq: number;
  hash: string;
  atMs: number;
}

export interface Checkpoint extends CheckpointHead {
  kid: string;
  /** Ed25519 signature of `checkpointPayload(…)`, base64. */
  signature: string;
}

/** One line of an exported checkpoints file, parsed. */
export interface ExportedCheckpoint extends Checkpoint {
  /** SPKI PEM of the key that signed it, as exported. */
  publicKey: string;
  /** 1-based line in the file, for messages. */
  line?: number;
}

/** The exact bytes that are signed. */
export function checkpointPayload(head: CheckpointHead): string {
  if (!Number.isSafeInteger(head.seq) || head.seq < 1) throw invalid("seq", `must be a whole number >= 1, got ${String(head.seq)}`);
  if (!Number.isSafeInteger(head.atMs) || head.atMs < 0) throw invalid("at_ms", `must be a whole number >= 0, got ${String(head.atMs)}`);
  if (!HASH_RE.test(head.hash)) throw invalid("hash", "must be 64 lowercase hex digits");
  return `{"v":${CHECKPOINT_VERSION},"org_id":${JSON.stringify(head.orgId)},"seq":${head.seq},"hash":${JSON.stringify(head.hash)},"at_ms":${head.atMs}}`;
}

export function signCheckpoint(head: CheckpointHead, key: SigningKey): Checkpoint {
  const signature = sign(null, Buffer.from(checkpointPayload(head), "utf8"), key.privateKey).toString("base64");
  return { orgId: head.orgId, seq: head.seq, hash: head.hash, atMs: head.atMs, kid: key.kid, signature };
}

/** Whether the signature is valid for the checkpoint under `publicKey`. Never throws: a bad key or signature is false. */
export function checkpointSignatureValid(checkpoint: Checkpoint, publicKey: KeyObject | string): boolean {
  try {
    const key = typeof publicKey === "string" ? createPublicKey(publicKey) : publicKey;
    if (key.asymmetricKeyType !== "ed25519") return false;
    const signature = Buffer.from(checkpoint.signature, "base64");
    if (signature.toString("base64") !== checkpoint.signature) return false;
    return verify(null, Buffer.from(checkpointPayload(checkpoint), "utf8"), key, signature);
  } catch {
    return false;
  }
}

interface CheckpointDbRow {
  org_id: string;
  seq: number | string;
  hash: string;
  at_ms: number | string;
  kid: string;
  signature: string;
}

function fromDb(row: CheckpointDbRow): Checkpoint {
  return { orgId: row.org_id, seq: Number(row.seq), hash: row.hash, atMs: Number(row.at_ms), kid: row.kid, signature: row.signature };
}

/** One tenant's checkpoints in seq order. */
export async function listCheckpoints(db: Queryable, orgId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<Checkpoint[]> {
  const { rows } = await db.query<CheckpointDbRow>(
    `SELECT org_id, seq, hash, at_ms, kid, signature FROM audit_checkpoints
     WHERE org_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    [orgId, options.afterSeq ?? 0, options.limit ?? null],
  );
  return rows.map(fromDb);
}

/** The tenant's newest checkpoint, if any. */
export async function latestCheckpoint(db: Queryable, orgId: string): Promise<Checkpoint | undefined> {
  const { rows } = await db.query<CheckpointDbRow>(
    "SELECT org_id, seq, hash, at_ms, kid, signature FROM audit_checkpoints WHERE org_id = $1 ORDER BY seq DESC LIMIT 1",
    [orgId],
  );
  return rows[0] ? fromDb(rows[0]) : undefined;
}

/**
 * Every checkpoint (of one tenant, or of all) as JSON lines with the signing public key, ordered by tenant and
 * seq; ends with a newline unless empty. Keep the output somewhere the database's writers cannot reach.
 */
export async function exportCheckpoints(db: Queryable, orgId?: string): Promise<string> {
  const { rows } = await db.query<CheckpointDbRow & { public_key: string }>(
    `SELECT c.org_id, c.seq, c.hash, c.at_ms, c.kid, c.signature, k.public_key
     FROM audit_checkpoints c JOIN checkpoint_keys k ON k.kid = c.kid
     WHERE $1::text IS NULL OR c.org_id = $1 ORDER BY c.org_id, c.seq`,
    [orgId ?? null],
  );
  return rows
    .map((r) => `${JSON.stringify({ org_id: r.org_id, seq: Number(r.seq), hash: r.hash, at_ms: Number(r.at_ms), kid: r.kid, signature: r.signature, public_key: r.public_key })}\n`)
    .join("");
}

/** Parses an exported checkpoints file. Throws INVALID_ARGUMENT naming the line and field of the first bad line. */
export function parseCheckpointLines(text: string): ExportedCheckpoint[] {
  const parsed: ExportedCheckpoint[] = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new SwitchyardError(ErrorCode.InvalidArgument, `checkpoints line ${line} is not JSON: ${(error as Error).message}`, { details: { path: `line ${line}` } });
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new SwitchyardError(ErrorCode.InvalidArgument, `checkpoints line ${line} must be a JSON object`, { details: { path: `line ${line}` } });
    }
    const o = value as Record<string, unknown>;
    const field = <T>(name: string, ok: (v: unknown) => boolean, what: string): T => {
      if (!ok(o[name])) throw new SwitchyardError(ErrorCode.InvalidArgument, `checkpoints line ${line}: ${name} must be ${what}`, { details: { path: `line ${line}.${name}` } });
      return o[name] as T;
    };
    const nonEmpty = (v: unknown) => typeof v === "string" && v !== "";
    parsed.push({
      orgId: field<string>("org_id", nonEmpty, "a non-empty string"),
      seq: field<number>("seq", (v) => Number.isSafeInteger(v) && (v as number) >= 1, "a whole number >= 1"),
      hash: field<string>("hash", (v) => typeof v === "string" && HASH_RE.test(v), "64 lowercase hex digits"),
      atMs: field<number>("at_ms", (v) => Number.isSafeInteger(v) && (v as number) >= 0, "a whole number >= 0"),
      kid: field<string>("kid", nonEmpty, "a non-empty string"),
      signature: field<string>("signature", nonEmpty, "a base64 string"),
      publicKey: field<string>("public_key", nonEmpty, "a PEM public key"),
      line,
    });
  });
  return parsed;
}

export type SignOutcome =
  | { status: "signed"; checkpoint: Checkpoint }
  /** The head is already signed (or nothing to sign: an empty chain, or another signer holds the tenant). */
  | { status: "unchanged"; checkpoint?: Checkpoint }
  /** The rows since the last checkpoint do not verify: nothing was signed. */
  | { status: "refused"; broken: { seq: number; reason: string } };

export interface SignHeadOptions {
  key: SigningKey;
  now: number;
  /** Wait for another signer of the same tenant instead of skipping. @defaultValue false */
  wait?: boolean;
  signal?: AbortSignal;
}

/**
 * Signs the tenant's current chain head, after checking that the rows since its last checkpoint verify and link
 * onto it (a signer never extends a chain that forked from what it signed before). Idempotent per head.
 */
export async function signHead(pool: Pool, orgId: string, options: SignHeadOptions): Promise<SignOutcome> {
  return withTransaction(pool, async (client) => {
    if (options.wait) await client.query("SELECT pg_advisory_xact_lock($1::int, hashtext($2))", [SIGN_LOCK_NAMESPACE, orgId]);
    else {
      const { rows } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_xact_lock($1::int, hashtext($2)) AS locked", [SIGN_LOCK_NAMESPACE, orgId]);
      if (!rows[0]?.locked) return { status: "unchanged" };
    }
    const heads = await client.query<{ seq: number | string; hash: string }>("SELECT seq, hash FROM audit_heads WHERE org_id = $1", [orgId]);
    const head: ChainHead = { seq: Number(heads.rows[0]?.seq ?? 0), hash: heads.rows[0]?.hash ?? GENESIS_HASH };
    const last = await latestCheckpoint(client, orgId);
    if (head.seq === 0) return { status: "unchanged" };
    if (last && last.seq >= head.seq) {
      if (last.seq === head.seq && last.hash === head.hash) return { status: "unchanged", checkpoint: last };
      return { status: "refused", broken: { seq: head.seq, reason: `the audit head (seq ${head.seq}) is at or behind the last checkpoint (seq ${last.seq})` } };
    }
    const from: ChainHead = last ? { seq: last.seq, hash: last.hash } : { seq: 0, hash: GENESIS_HASH };
    const broken = await verifySegment(auditChain, client, orgId, from, head, { signal: options.signal });
    if (broken) return { status: "refused", broken };
    const checkpoint = signCheckpoint({ orgId, seq: head.seq, hash: head.hash, atMs: options.now }, options.key);
    await client.query(
      "INSERT INTO audit_checkpoints (org_id, seq, hash, at_ms, kid, signature) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (org_id, seq) DO NOTHING",
      [checkpoint.orgId, checkpoint.seq, checkpoint.hash, checkpoint.atMs, checkpoint.kid, checkpoint.signature],
    );
    return { status: "signed", checkpoint };
  });
}

/** Public keys of the given kids from the key table (for callers that verify stored checkpoints). */
export async function publicKeysFor(db: Queryable, checkpoints: readonly Checkpoint[]): Promise<Map<string, string>> {
  return checkpointPublicKeys(db, [...new Set(checkpoints.map((c) => c.kid))]);
}

function invalid(field: string, message: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.InvalidArgument, `checkpoint ${field} ${message}`, { details: { path: field } });
}

/**
 * The audit chain's hashing, pure: how a row is serialized and how rows link.
 *
 * `hash = sha256_hex(prev_hash + "\n" + canonical(row))`, with `prev_hash` of seq 1 = GENESIS_HASH.
 *
 * The canonical form is JSON text with a fixed key order (never a generic serializer's order). Every number is
 * written deterministically: seq and at_ms as integers; cost rounded to 15 significant digits first, because
 * any decimal of at most 15 significant digits survives a trip through a Postgres `double precision` column
 * whatever its `extra_float_digits` setting — so 0.1 + 0.2 hashes the same before the INSERT and after the
 * SELECT. `chainRows` stores the rounded cost, so the row in the table is exactly the row that was hashed.
 * Text is made storable the same way: lone UTF-16 surrogates and NUL (which Postgres text cannot hold) become
 * U+FFFD before hashing.
 */
import { hash as oneShotHash } from "node:crypto";
import { GENESIS_HASH, type AuditEntry, type AuditRow } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";

/** Bumped if the canonical form ever changes; older rows keep verifying under the version they carry. */
const CANONICAL_VERSION = 1;
const LARGEST_15_DIGIT_DOUBLE = 1.79769313486231e308;
const HASH_RE = /^[0-9a-f]{64}$/;
const UNSTORABLE_RE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** Cheap pre-check: text without NUL or any surrogate cannot hold anything UNSTORABLE_RE would replace. */
const MAYBE_UNSTORABLE_RE = /[\u0000\uD800-\uDFFF]/;

export interface ChainHead {
  seq: number;
  hash: string;
}

/** The cost as stored and hashed: finite, rounded to 15 significant digits, no negative zero. */
export function normalizeAuditCost(cost: number): number {
  if (typeof cost !== "number" || !Number.isFinite(cost)) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `audit cost must be a finite number, got ${String(cost)}`, { details: { path: "cost" } });
  }
  const rounded = Number(cost.toPrecision(15));
  // Rounding up can overflow near the largest double; take the largest 15-digit value instead.
  if (!Number.isFinite(rounded)) return Math.sign(cost) * LARGEST_15_DIGIT_DOUBLE;
  return rounded === 0 ? 0 : rounded;
}

export function canonicalAuditRow(entry: AuditEntry & { seq: number }): string {
  const text = (value: string, name: string) => {
    if (typeof value !== "string") throw invalidEntry(name, `must be a string, got ${typeof value}`);
    return JSON.stringify(value);
  };
  const integer = (value: number, name: string) => {
    if (!Number.isSafeInteger(value)) throw invalidEntry(name, `must be a safe integer, got ${String(value)}`);
    return String(value);
  };
  return (
    `{"v":${CANONICAL_VERSION}` +
    `,"org_id":${text(entry.orgId, "orgId")}` +
    `,"seq":${integer(entry.seq, "seq")}` +
    `,"action":${text(entry.action, "action")}` +
    `,"actor":${text(entry.actor, "actor")}` +
    `,"destination":${text(entry.destination, "destination")}` +
    `,"verdict":${text(entry.verdict, "verdict")}` +
    `,"rule":${text(entry.rule, "rule")}` +
    `,"reason":${text(entry.reason, "reason")}` +
    `,"payload_hash":${text(entry.payloadHash, "payloadHash")}` +
    `,"cost":${String(normalizeAuditCost(entry.cost))}` +
    `,"task_id":${text(entry.taskId, "taskId")}` +
    `,"step_id":${text(entry.stepId, "stepId")}` +
    `,"envelope_id":${text(entry.envelopeId, "envelopeId")}` +
    `,"at_ms":${integer(entry.atMs, "atMs")}}`
  );
}

export function chainHash(prevHash: string, canonical: string): string {
  // One-shot hash of the concatenation: the same UTF-8 bytes as three update() calls, without a Hash object.
  return oneShotHash("sha256", `${prevHash}\n${canonical}`, "hex");
}

/** The hash a stored row should carry, recomputed from its contents and its own prev_hash. */
export function rowHash(row: AuditEntry & { seq: number; prevHash: string }): string {
  return chainHash(row.prevHash, canonicalAuditRow(row));
}

/**
 * Chains `entries` (all of one tenant, in order) onto `head`. Pure: the caller holds the head's lock and
 * persists the rows and the new head (`rows.at(-1)`) together.
 */
export function chainRows(head: ChainHead, entries: readonly AuditEntry[]): AuditRow[] {
  if (!Number.isSafeInteger(head.seq) || head.seq < 0 || !HASH_RE.test(head.hash)) {
    throw new SwitchyardError(ErrorCode.Internal, `audit head is unusable: seq ${String(head.seq)}, hash ${String(head.hash)}`);
  }
  if (head.seq === 0 && head.hash !== GENESIS_HASH) throw new SwitchyardError(ErrorCode.Internal, "audit head at seq 0 must carry the genesis hash");
  const orgId = entries[0]?.orgId;
  let { seq, hash } = head;
  return entries.map((entry) => {
    if (entry.orgId !== orgId) throw invalidEntry("orgId", `one chain holds one tenant; got ${orgId} and ${entry.orgId}`);
    const row = storableRow(entry, seq + 1, hash);
    row.hash = rowHash(row);
    seq = row.seq;
    hash = row.hash;
    return row;
  });
}

/** The row as it will be stored (text made storable, cost normalized), built directly rather than spread. */
function storableRow(entry: AuditEntry, seq: number, prevHash: string): AuditRow {
  return {
    orgId: clean(entry.orgId),
    action: clean(entry.action),
    actor: clean(entry.actor),
    destination: clean(entry.destination),
    verdict: clean(entry.verdict),
    rule: clean(entry.rule),
    reason: clean(entry.reason),
    payloadHash: clean(entry.payloadHash),
    cost: normalizeAuditCost(entry.cost),
    taskId: clean(entry.taskId),
    stepId: clean(entry.stepId),
    envelopeId: clean(entry.envelopeId),
    atMs: entry.atMs,
    seq,
    prevHash,
    hash: "",
  };
}

function clean(value: string): string {
  if (typeof value !== "string" || !MAYBE_UNSTORABLE_RE.test(value)) return value;
  return value.replace(UNSTORABLE_RE, "\uFFFD");
}

function invalidEntry(field: string, message: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.InvalidArgument, `audit entry ${field} ${message}`, { details: { path: field } });
}

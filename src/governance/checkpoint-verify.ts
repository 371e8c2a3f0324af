/**
 * Verifies a tenant's chain together with its signed checkpoints.
 *
 * Every checkpoint in `audit_checkpoints` must carry a valid signature by the key its kid names in
 * `checkpoint_keys`, and the recomputed chain must have exactly the checkpoint's hash at its seq. With an
 * exported file, the file's checkpoints are checked the same way — but their signatures against the public key
 * IN THE FILE, since someone able to rewrite the audit table may have rewritten the key table and re-signed as
 * well. A consistent rewrite of the whole table (every hash recomputed) verifies on its own; it cannot match a
 * head that was signed, and exported, before it.
 *
 * The result is the chain verification's, with the first problem — a break in the chain, a bad signature, or a
 * checkpoint the chain no longer matches — named by the lowest seq it concerns.
 */
import { createPublicKey, type KeyObject } from "node:crypto";
import type { Queryable } from "../store/db.js";
import type { CheckpointStores } from "../store/audit/checkpoint-store.js";
import { verifyChain, type ExpectedHash, type VerifyChainResult } from "./audit-verify.js";
import type { ExportedCheckpoint } from "./checkpoint-export.js";
import { checkpointKeyId, checkpointSignatureValid, type Checkpoint } from "./checkpoint-signing.js";
import { listCheckpoints, publicKeysFor } from "./checkpoints.js";

export interface VerifyWithCheckpointsOptions {
  /** Checkpoints from an exported file (`parseCheckpointLines`); lines of other tenants are ignored. */
  checkpoints?: readonly ExportedCheckpoint[];
  /** Name of the file, for messages. @defaultValue "the checkpoints file" */
  source?: string;
  signal?: AbortSignal;
  pageSize?: number;
}

export interface VerifyWithCheckpointsResult extends VerifyChainResult {
  checkpoints: {
    /** Checkpoints in the table that were checked. */
    table: number;
    /** Checkpoints of this tenant in the file that were checked (absent without a file). */
    file?: number;
    /** Highest seq a valid checkpoint vouches for (0 when none). */
    signedSeq: number;
  };
}

interface Problem {
  seq: number;
  reason: string;
}

export async function verifyChainWithCheckpoints(
  stores: CheckpointStores,
  db: Queryable,
  orgId: string,
  options: VerifyWithCheckpointsOptions = {},
): Promise<VerifyWithCheckpointsResult> {
  // Read before the chain's head, so every stored checkpoint is at or below the head verification starts from.
  const stored = await listCheckpoints(stores, db, orgId);
  const tableKeys = await publicKeysFor(stores, db, stored);
  const problems: Problem[] = [];
  const expected: ExpectedHash[] = [];
  const when = (c: Checkpoint) => new Date(c.atMs).toISOString();

  for (const c of stored) {
    const pem = tableKeys.get(c.kid);
    const label = `the checkpoint at seq ${c.seq} (key ${c.kid}, signed ${when(c)})`;
    if (pem === undefined) problems.push({ seq: c.seq, reason: `${label} names a key that is not in checkpoint_keys` });
    else if (keyIdOf(pem) !== c.kid) problems.push({ seq: c.seq, reason: `${label}: checkpoint_keys holds a public key under kid ${c.kid} that is not that key (the key table was altered)` });
    else if (!checkpointSignatureValid(c, pem)) problems.push({ seq: c.seq, reason: `${label}: the signature does not verify with key ${c.kid}` });
    else expected.push({ seq: c.seq, hash: c.hash, source: label });
  }

  const fromFile = options.checkpoints?.filter((c) => c.orgId === orgId);
  const fileName = options.source ?? "the checkpoints file";
  for (const c of fromFile ?? []) {
    const label = `${fileName}${c.line !== undefined ? ` line ${c.line}` : ""} (checkpoint at seq ${c.seq}, key ${c.kid}, signed ${when(c)})`;
    const problem = fileCheckpointProblem(c, tableKeys.get(c.kid));
    if (problem) problems.push({ seq: c.seq, reason: `${label}: ${problem}` });
    else expected.push({ seq: c.seq, hash: c.hash, source: label });
  }

  const chain = await verifyChain(stores.audit, db, orgId, { expected, signal: options.signal, pageSize: options.pageSize });
  if (chain.firstBroken) problems.push(chain.firstBroken);
  const first = problems.reduce<Problem | undefined>((best, p) => (best === undefined || p.seq < best.seq ? p : best), undefined);
  const checkpoints = {
    table: stored.length,
    ...(fromFile ? { file: fromFile.length } : {}),
    signedSeq: first ? 0 : Math.max(0, ...expected.map((e) => e.seq)),
  };
  if (first) return { ok: false, rows: chain.rows, headSeq: chain.headSeq, firstBroken: first, checkpoints };
  return { ...chain, checkpoints };
}

/** Why an exported checkpoint cannot be trusted, or undefined when its signature holds under its own key. */
function fileCheckpointProblem(c: ExportedCheckpoint, tablePem: string | undefined): string | undefined {
  let key: KeyObject;
  try {
    key = createPublicKey(c.publicKey);
  } catch {
    return "its public_key does not parse";
  }
  if (key.asymmetricKeyType !== "ed25519") return `its public_key is ${String(key.asymmetricKeyType)}, not Ed25519`;
  if (checkpointKeyId(key) !== c.kid) return `its kid does not belong to its public_key (that key's id is ${checkpointKeyId(key)})`;
  if (!checkpointSignatureValid(c, key)) return "the signature does not verify with the public key in the file (the line was altered or forged)";
  if (tablePem !== undefined && keyIdOf(tablePem) !== c.kid) return `checkpoint_keys holds a different public key under kid ${c.kid} (the key table was rewritten)`;
  return undefined;
}

function keyIdOf(pem: string): string | undefined {
  try {
    return checkpointKeyId(pem);
  } catch {
    return undefined;
  }
}

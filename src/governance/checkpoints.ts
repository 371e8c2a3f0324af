/**
 * Signed audit checkpoints: a tenant's chain head `{org_id, seq, hash, at_ms}` signed with an Ed25519 key and
 * stored in `audit_checkpoints` (through the `checkpoints` port: store/audit/checkpoint-store.ts). A checkpoint
 * makes a rewrite of the whole chain detectable: recomputing every hash keeps the chain self-consistent, but not
 * equal to a head signed before the rewrite.
 *
 * What is signed, and the exported file, are pure (checkpoint-signing.ts, checkpoint-export.ts), re-exported here.
 * A head is signed here with a key this process holds (`signHead`), or where the key's holder runs, the signature
 * then stored here after the same checks (`storeSignedCheckpoint`: the CLI's `audit checkpoint --key-file`).
 */
import { GENESIS_HASH } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { withTransaction, type Pool, type PoolClient, type Queryable } from "../store/db.js";
import type { CheckpointStores } from "../store/audit/checkpoint-store.js";
import { verifySegment } from "./audit-verify.js";
import type { ChainHead } from "./audit-hash.js";
import { registerPublicKey } from "./checkpoint-keys.js";
import { exportLine } from "./checkpoint-export.js";
import { checkpointKeyId, checkpointPayload, checkpointSignatureValid, parseCheckpointPublicKey, signCheckpoint, type Checkpoint, type SigningKey } from "./checkpoint-signing.js";

export { checkpointPayload, checkpointSignatureValid, signCheckpoint, type Checkpoint, type CheckpointHead } from "./checkpoint-signing.js";
export { parseCheckpointLines, type ExportedCheckpoint } from "./checkpoint-export.js";

/** One tenant's checkpoints in seq order. */
export function listCheckpoints(stores: Pick<CheckpointStores, "checkpoints">, db: Queryable, orgId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<Checkpoint[]> {
  return stores.checkpoints.list(db, orgId, options);
}

/** The tenant's newest checkpoint, if any. */
export function latestCheckpoint(stores: Pick<CheckpointStores, "checkpoints">, db: Queryable, orgId: string): Promise<Checkpoint | undefined> {
  return stores.checkpoints.latest(db, orgId);
}

/**
 * Every checkpoint (of one tenant, or of all) as JSON lines with the signing public key, ordered by tenant and
 * seq; ends with a newline unless empty. Keep the output somewhere the database's writers cannot reach.
 */
export async function exportCheckpoints(stores: Pick<CheckpointStores, "checkpoints">, db: Queryable, orgId?: string): Promise<string> {
  return (await stores.checkpoints.listWithPublicKeys(db, orgId)).map(exportLine).join("");
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
export async function signHead(stores: CheckpointStores, pool: Pool, orgId: string, options: SignHeadOptions): Promise<SignOutcome> {
  return withSigningLock(stores, pool, orgId, options.wait ?? false, async (client) => {
    const head: ChainHead = (await stores.audit.head(client, orgId)) ?? { seq: 0, hash: GENESIS_HASH };
    return signOnto(stores, client, orgId, head, options.signal, () => signCheckpoint({ orgId, seq: head.seq, hash: head.hash, atMs: options.now }, options.key));
  });
}

/**
 * Stores a checkpoint signed where its key is held (the private key never reaches this process), after the checks
 * `signHead` makes — the rows since the last checkpoint verify and end in the signed hash — and a check that the
 * signature is `publicKey`'s and the kid that key's. The public key is recorded first, as `activeSigningKey`
 * records an operator key. Waits for another signer of the tenant. INVALID_ARGUMENT for a bad key or signature.
 */
export async function storeSignedCheckpoint(
  stores: CheckpointStores,
  pool: Pool,
  checkpoint: Checkpoint,
  publicKey: string,
  options: { signal?: AbortSignal } = {},
): Promise<SignOutcome> {
  checkpointPayload(checkpoint);
  const key = parseCheckpointPublicKey(publicKey);
  if (checkpointKeyId(key) !== checkpoint.kid) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `checkpoint kid ${checkpoint.kid} is not the id of its public key (${checkpointKeyId(key)})`, { details: { path: "kid" } });
  }
  if (!checkpointSignatureValid(checkpoint, key)) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `the checkpoint's signature does not verify with key ${checkpoint.kid}`, { details: { path: "signature" } });
  }
  await registerPublicKey(stores, pool, { kid: checkpoint.kid, publicKey });
  return withSigningLock(stores, pool, checkpoint.orgId, true, (client) =>
    signOnto(stores, client, checkpoint.orgId, { seq: checkpoint.seq, hash: checkpoint.hash }, options.signal, () => checkpoint),
  );
}

/** Runs `work` holding the tenant's signing lock; without `wait`, another signer holding it means nothing to do. */
function withSigningLock(stores: CheckpointStores, pool: Pool, orgId: string, wait: boolean, work: (client: PoolClient) => Promise<SignOutcome>): Promise<SignOutcome> {
  return withTransaction(pool, async (client) => {
    if (wait) await stores.checkpoints.lockSigner(client, orgId);
    else if (!(await stores.checkpoints.tryLockSigner(client, orgId))) return { status: "unchanged" };
    return work(client);
  });
}

/** Stores `checkpointOf()` for `head` once the rows since the tenant's last checkpoint verify up to it. */
async function signOnto(
  stores: CheckpointStores,
  client: PoolClient,
  orgId: string,
  head: ChainHead,
  signal: AbortSignal | undefined,
  checkpointOf: () => Checkpoint,
): Promise<SignOutcome> {
  const last = await stores.checkpoints.latest(client, orgId);
  if (head.seq === 0) return { status: "unchanged" };
  if (last && last.seq >= head.seq) {
    if (last.seq === head.seq && last.hash === head.hash) return { status: "unchanged", checkpoint: last };
    return { status: "refused", broken: { seq: head.seq, reason: `the audit head (seq ${head.seq}) is at or behind the last checkpoint (seq ${last.seq})` } };
  }
  const from: ChainHead = last ? { seq: last.seq, hash: last.hash } : { seq: 0, hash: GENESIS_HASH };
  const broken = await verifySegment(stores.audit, client, orgId, from, head, { signal });
  if (broken) return { status: "refused", broken };
  const checkpoint = checkpointOf();
  await stores.checkpoints.insert(client, checkpoint);
  return { status: "signed", checkpoint };
}

/** Public keys of the given kids from the key table (for callers that verify stored checkpoints). */
export function publicKeysFor(stores: Pick<CheckpointStores, "checkpointKeys">, db: Queryable, checkpoints: readonly Checkpoint[]): Promise<Map<string, string>> {
  return stores.checkpointKeys.publicKeys(db, [...new Set(checkpoints.map((c) => c.kid))]);
}

/**
 * Verifies one tenant's audit chain by recomputing it, page by page in seq order (memory stays flat however
 * long the chain is).
 *
 * The chain is checked up to where it stood when verification started (the head and the highest seq are read
 * in one statement, so one snapshot); rows appended while it runs are left for the next run. A break is named
 * by the first seq where the chain stops being provable:
 * - a row whose contents no longer match its hash → that row's seq;
 * - a row whose prev_hash is not its predecessor's hash → that row's seq;
 * - a missing (deleted) row → the missing seq itself (the first seq of the gap), not the row after it;
 * - rows missing at the tail, or rows beyond the head → the first seq after the last good row;
 * - an audit_heads row that does not match the last row → the head's seq.
 */
import { GENESIS_HASH } from "../domain.js";
import { SwitchyardError } from "../errors.js";
import type { Queryable } from "../store/db.js";
import { rowHash } from "./audit-hash.js";
import { AUDIT_COLUMNS, auditRowFromDb, type AuditDbRow } from "./audit-log.js";

export interface VerifyChainOptions {
  signal?: AbortSignal;
  /** Rows fetched per query; default 1000. */
  pageSize?: number;
}

export interface VerifyChainResult {
  ok: boolean;
  /** Rows checked (up to and including the first broken one). */
  rows: number;
  /** The head's seq when verification started (0 for an empty chain). */
  headSeq: number;
  firstBroken?: { seq: number; reason: string };
}

export async function verifyChain(db: Queryable, orgId: string, options: VerifyChainOptions = {}): Promise<VerifyChainResult> {
  const pageSize = options.pageSize ?? 1000;
  const checkAborted = () => {
    if (options.signal?.aborted) throw SwitchyardError.from(options.signal.reason);
  };
  checkAborted();

  const start = await db.query<{ head_seq: string | null; head_hash: string | null; max_seq: string | null }>(
    `SELECT (SELECT seq FROM audit_heads WHERE org_id = $1) AS head_seq,
            (SELECT hash FROM audit_heads WHERE org_id = $1) AS head_hash,
            (SELECT max(seq) FROM audit_log WHERE org_id = $1) AS max_seq`,
    [orgId],
  );
  const headSeq = Number(start.rows[0]?.head_seq ?? 0);
  const headHash = start.rows[0]?.head_hash ?? GENESIS_HASH;
  const maxSeq = Number(start.rows[0]?.max_seq ?? 0);
  const untilSeq = Math.max(headSeq, maxSeq);

  let checked = 0;
  let lastSeq = 0;
  let lastHash = GENESIS_HASH;
  const broken = (seq: number, reason: string): VerifyChainResult => ({ ok: false, rows: checked, headSeq, firstBroken: { seq, reason } });

  while (lastSeq < untilSeq) {
    checkAborted();
    const page = await db.query<AuditDbRow>(
      `SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE org_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4`,
      [orgId, lastSeq, untilSeq, pageSize],
    );
    if (page.rows.length === 0) break;
    for (const dbRow of page.rows) {
      const row = auditRowFromDb(dbRow);
      const expected = lastSeq + 1;
      if (row.seq !== expected) {
        const gap = row.seq - 1 === expected ? `row ${expected} is missing` : `rows ${expected}..${row.seq - 1} are missing`;
        return broken(expected, `${gap} (the next row present is ${row.seq})`);
      }
      checked++;
      if (row.prevHash !== lastHash) return broken(row.seq, `prev_hash does not match the hash of ${row.seq === 1 ? "the genesis" : `row ${row.seq - 1}`}`);
      if (rowHash(row) !== row.hash) return broken(row.seq, "the row's contents do not match its hash (the row was altered)");
      lastSeq = row.seq;
      lastHash = row.hash;
    }
  }

  if (lastSeq < headSeq) return broken(lastSeq + 1, `the chain ends at seq ${lastSeq} but the audit head is at seq ${headSeq} (rows missing at the tail)`);
  if (maxSeq > headSeq) return broken(headSeq + 1, `rows exist beyond the audit head (head at seq ${headSeq}, last row ${maxSeq})`);
  if (headHash !== lastHash) return broken(headSeq, `the audit head's hash does not match row ${headSeq}`);
  return { ok: true, rows: checked, headSeq };
}

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
 * - an audit_heads row that does not match the last row → the head's seq;
 * - a row whose hash differs from a signed checkpoint's (`expected`) → the checkpoint's seq: the chain verifies
 *   on its own, so it was rewritten consistently after the checkpoint was signed (see checkpoint-verify.ts);
 * - a checkpoint beyond the end of the chain → the first missing seq.
 *
 * The rows are read through the audit port (store/audit/audit-store.ts): `db` is the caller's connection or
 * transaction (a tenant-scoped one through the API, the signer's before it signs).
 */
import { GENESIS_HASH } from "../domain.js";
import { SwitchyardError } from "../errors.js";
import type { AuditStore } from "../store/audit/audit-store.js";
import type { Queryable } from "../store/db.js";
import { rowHash, type ChainHead } from "./audit-hash.js";

/** What verification reads. */
export type AuditChainReads = Pick<AuditStore, "chainStart" | "chainPage">;

export interface VerifyChainOptions {
  signal?: AbortSignal;
  /** Rows fetched per query; default 1000. */
  pageSize?: number;
  /**
   * Hashes the chain must have at given seqs (signed checkpoints). A row whose hash differs, or an expectation
   * beyond the end of the chain, is a break like any other, named at the first seq where it shows.
   */
  expected?: readonly ExpectedHash[];
}

/** A hash the chain must carry at `seq`; `source` names where the expectation came from, for the reason text. */
export interface ExpectedHash {
  seq: number;
  hash: string;
  source: string;
}

export interface VerifyChainResult {
  ok: boolean;
  /** Rows checked (up to and including the first broken one). */
  rows: number;
  /** The head's seq when verification started (0 for an empty chain). */
  headSeq: number;
  firstBroken?: { seq: number; reason: string };
}

export async function verifyChain(store: AuditChainReads, db: Queryable, orgId: string, options: VerifyChainOptions = {}): Promise<VerifyChainResult> {
  const checkAborted = abortChecker(options.signal);
  checkAborted();

  const start = await store.chainStart(db, orgId);
  const headSeq = start.head?.seq ?? 0;
  const headHash = start.head?.hash ?? GENESIS_HASH;
  const maxSeq = start.maxSeq;
  const untilSeq = Math.max(headSeq, maxSeq);

  const expected = [...(options.expected ?? [])].sort((a, b) => a.seq - b.seq);
  const walked = await walkChain(store, db, orgId, { seq: 0, hash: GENESIS_HASH }, untilSeq, { pageSize: options.pageSize ?? 1000, checkAborted, expected });
  const broken = (seq: number, reason: string): VerifyChainResult => ({ ok: false, rows: walked.checked, headSeq, firstBroken: { seq, reason } });
  if (walked.broken) return broken(walked.broken.seq, walked.broken.reason);
  const lastSeq = walked.last.seq;

  if (lastSeq < headSeq) return broken(lastSeq + 1, `the chain ends at seq ${lastSeq} but the audit head is at seq ${headSeq} (rows missing at the tail)`);
  if (maxSeq > headSeq) return broken(headSeq + 1, `rows exist beyond the audit head (head at seq ${headSeq}, last row ${maxSeq})`);
  if (headHash !== walked.last.hash) return broken(headSeq, `the audit head's hash does not match row ${headSeq}`);
  const beyond = expected.find((e) => e.seq > lastSeq);
  if (beyond) {
    return broken(lastSeq + 1, `the chain ends at seq ${lastSeq} but ${beyond.source} covers seq ${beyond.seq}: rows ${lastSeq + 1}..${beyond.seq} were removed`);
  }
  return { ok: true, rows: walked.checked, headSeq };
}

/**
 * Checks the rows after `from` up to `toSeq` link onto `from` and match their hashes, and that the row at
 * `toSeq` has `toHash`. Used before signing a checkpoint, so a signer never extends a chain that forked from
 * the last one it signed. Returns the first break, or undefined when the segment is intact.
 */
export async function verifySegment(
  store: AuditChainReads,
  db: Queryable,
  orgId: string,
  from: ChainHead,
  to: ChainHead,
  options: { signal?: AbortSignal; pageSize?: number } = {},
): Promise<{ seq: number; reason: string } | undefined> {
  const checkAborted = abortChecker(options.signal);
  const walked = await walkChain(store, db, orgId, from, to.seq, { pageSize: options.pageSize ?? 1000, checkAborted, expected: [] });
  if (walked.broken) return walked.broken;
  if (walked.last.seq < to.seq) return { seq: walked.last.seq + 1, reason: `the chain ends at seq ${walked.last.seq} but the audit head is at seq ${to.seq}` };
  if (walked.last.hash !== to.hash) return { seq: to.seq, reason: `the audit head's hash does not match row ${to.seq}` };
  return undefined;
}

interface Walked {
  checked: number;
  last: ChainHead;
  broken?: { seq: number; reason: string };
}

/** Recomputes rows `from.seq + 1 .. untilSeq` page by page, checking links, hashes and expected hashes. */
async function walkChain(
  store: AuditChainReads,
  db: Queryable,
  orgId: string,
  from: ChainHead,
  untilSeq: number,
  options: { pageSize: number; checkAborted: () => void; expected: readonly ExpectedHash[] },
): Promise<Walked> {
  let checked = 0;
  let lastSeq = from.seq;
  let lastHash = from.hash;
  // Seq of the last expectation that matched, to say where a rewrite must lie.
  let lastMatched = 0;
  let next = 0;
  const { expected } = options;
  while (next < expected.length && expected[next]!.seq <= from.seq) next++;
  const broken = (seq: number, reason: string): Walked => ({ checked, last: { seq: lastSeq, hash: lastHash }, broken: { seq, reason } });

  while (lastSeq < untilSeq) {
    options.checkAborted();
    const page = await store.chainPage(db, orgId, lastSeq, untilSeq, options.pageSize);
    if (page.length === 0) break;
    for (const row of page) {
      const want = lastSeq + 1;
      if (row.seq !== want) {
        const gap = row.seq - 1 === want ? `row ${want} is missing` : `rows ${want}..${row.seq - 1} are missing`;
        return broken(want, `${gap} (the next row present is ${row.seq})`);
      }
      checked++;
      if (row.prevHash !== lastHash) return broken(row.seq, `prev_hash does not match the hash of ${row.seq === 1 ? "the genesis" : `row ${row.seq - 1}`}`);
      if (rowHash(row) !== row.hash) return broken(row.seq, "the row's contents do not match its hash (the row was altered)");
      let expectedHere = false;
      for (; next < expected.length && expected[next]!.seq === row.seq; next++) {
        const e = expected[next]!;
        expectedHere = true;
        if (e.hash !== row.hash) {
          return broken(
            row.seq,
            `the chain's hash at seq ${row.seq} is ${row.hash} but ${e.source} says ${e.hash}: ` +
              `the chain was rewritten after it was signed (the change lies in rows ${lastMatched + 1}..${row.seq})`,
          );
        }
      }
      if (expectedHere) lastMatched = row.seq;
      lastSeq = row.seq;
      lastHash = row.hash;
    }
  }
  return { checked, last: { seq: lastSeq, hash: lastHash } };
}

function abortChecker(signal: AbortSignal | undefined): () => void {
  return () => {
    if (signal?.aborted) throw SwitchyardError.from(signal.reason);
  };
}

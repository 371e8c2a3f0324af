/**
 * The Postgres adapter of the audit log (store/audit/audit-store.ts): appending to and reading the per-tenant chain.
 *
 * `appendAudit` runs inside the caller's transaction (the hop's), so the audit rows commit or vanish with the
 * decision they record. Each tenant's `audit_heads` row is locked (upserted) before chaining; concurrent
 * appenders for the same tenant queue on that lock and each chains onto the head the previous one committed,
 * so the chain never forks. Locks are taken in org_id order so multi-tenant batches cannot deadlock each other.
 * Requires READ COMMITTED (the default): a waiter must see the head its predecessor committed. A coordinator may
 * pass the heads it keeps in memory instead (`options.heads`, audit-heads.ts): no lock is taken first for those,
 * and the head moves only if nobody else moved it meanwhile (STALE_HEAD otherwise, retried the locking way).
 */
import { GENESIS_HASH, type AuditEntry, type AuditRow } from "../../domain.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { chainRows, type ChainHead } from "../../governance/audit-hash.js";
import type { PoolClient, Queryable } from "../db.js";
import type { AppendAuditOptions, AuditStore, ChainStart, ListAuditOptions } from "./audit-store.js";

export type { AppendAuditOptions, ListAuditOptions } from "./audit-store.js";

export function createPostgresAuditStore(): AuditStore {
  return { append: appendAudit, list: listAudit, chainStart: readChainStart, chainPage: readChainPage, head: readHead };
}

/** Appends `entries` (any mix of tenants; order kept per tenant) and returns the chained rows in input order. */
export async function appendAudit(client: Pick<PoolClient, "query">, entries: readonly AuditEntry[], options: AppendAuditOptions = {}): Promise<AuditRow[]> {
  if (entries.length === 0) return [];
  const byOrg = new Map<string, AuditEntry[]>();
  for (const entry of entries) {
    if (typeof entry.orgId !== "string" || entry.orgId === "") {
      throw new SwitchyardError(ErrorCode.InvalidArgument, "audit entry orgId must be a non-empty string", { details: { path: "orgId" } });
    }
    const list = byOrg.get(entry.orgId) ?? [];
    list.push(entry);
    byOrg.set(entry.orgId, list);
  }
  const orgIds = [...byOrg.keys()].sort();
  const headByOrg = new Map<string, ChainHead>();
  const toLock: string[] = [];
  for (const orgId of orgIds) {
    const cached = options.heads?.get(orgId);
    if (cached) headByOrg.set(orgId, cached);
    else toLock.push(orgId);
  }

  if (toLock.length > 0) for (const [orgId, head] of await lockHeads(client, toLock)) headByOrg.set(orgId, head);

  const rowsByOrg = new Map<string, AuditRow[]>();
  for (const orgId of orgIds) {
    const head = headByOrg.get(orgId);
    if (!head) throw new SwitchyardError(ErrorCode.Internal, `audit head for ${orgId} vanished while appending`);
    rowsByOrg.set(orgId, chainRows(head, byOrg.get(orgId)!));
  }
  const rows = [...rowsByOrg.values()].flat();

  const lasts = orgIds.map((orgId) => rowsByOrg.get(orgId)!.at(-1)!);
  const moved = await moveHeads(client, rows, lasts, orgIds.map((orgId) => headByOrg.get(orgId)!));
  if (moved.length !== orgIds.length) {
    const movedSet = new Set(moved);
    const stale = orgIds.filter((orgId) => !movedSet.has(orgId));
    options.heads?.stale(stale);
    throw new SwitchyardError(ErrorCode.StaleHead, `audit head of ${stale.join(", ")} moved since it was cached; applying again under the head lock`, {
      details: { orgIds: stale },
    });
  }

  // Input order, tenant-relative order preserved.
  const cursor = new Map<string, number>();
  return entries.map((entry) => {
    const i = cursor.get(entry.orgId) ?? 0;
    cursor.set(entry.orgId, i + 1);
    return rowsByOrg.get(entry.orgId)![i]!;
  });
}

/**
 * One round trip creates missing heads and locks every head: ON CONFLICT DO UPDATE takes the row lock and, under
 * READ COMMITTED, returns the latest committed head even when it had to wait for another appender. Rows are
 * inserted (so locked) in org_id order.
 */
async function lockHeads(client: Pick<PoolClient, "query">, orgIds: readonly string[]): Promise<Map<string, ChainHead>> {
  const heads = await client.query<{ org_id: string; seq: string | number; hash: string }>(
    `INSERT INTO audit_heads AS h (org_id, seq, hash)
     SELECT org_id, 0, $2 FROM unnest($1::text[]) AS o(org_id) ORDER BY org_id
     ON CONFLICT (org_id) DO UPDATE SET seq = h.seq
     RETURNING h.org_id, h.seq, h.hash`,
    [orgIds, GENESIS_HASH],
  );
  return new Map(heads.rows.map((h) => [h.org_id, { seq: Number(h.seq), hash: h.hash }]));
}

/**
 * Moves each tenant's head from `from` (the head its rows were chained onto, in the order of `lasts`) to its last
 * row, and inserts the rows of the tenants whose head moved; returns those tenants.
 */
async function moveHeads(client: Pick<PoolClient, "query">, rows: readonly AuditRow[], lasts: readonly AuditRow[], from: readonly ChainHead[]): Promise<string[]> {
  const column = <T>(pick: (row: AuditRow) => T) => rows.map(pick);
  // The new heads and the rows in one statement. A head moves only from the head the rows were chained onto: for
  // a locked head that holds by construction; for a cached one it is the check that no other writer appended
  // meanwhile (under READ COMMITTED the UPDATE waits for a writer holding the row and re-checks the committed
  // head). Rows are inserted only for tenants whose head moved, and the unique key (org_id, seq) stays the last
  // line of defence.
  const moved = await client.query<{ org_id: string }>(
    `WITH new_heads AS (
       UPDATE audit_heads AS h SET seq = v.seq, hash = v.hash
       FROM unnest($17::text[], $18::bigint[], $19::text[], $20::bigint[], $21::text[]) AS v(org_id, seq, hash, prev_seq, prev_hash)
       WHERE h.org_id = v.org_id AND h.seq = v.prev_seq AND h.hash = v.prev_hash
       RETURNING h.org_id
     ), new_rows AS (
       INSERT INTO audit_log (org_id, seq, prev_hash, hash, action, actor, destination, verdict, rule, reason,
                              payload_hash, cost, task_id, step_id, envelope_id, at_ms)
       SELECT r.* FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                              $8::text[], $9::text[], $10::text[], $11::text[], $12::float8[], $13::text[], $14::text[],
                              $15::text[], $16::bigint[])
         AS r(org_id, seq, prev_hash, hash, action, actor, destination, verdict, rule, reason, payload_hash, cost,
              task_id, step_id, envelope_id, at_ms)
       WHERE r.org_id IN (SELECT org_id FROM new_heads)
     )
     SELECT org_id FROM new_heads`,
    [
      column((r) => r.orgId),
      column((r) => r.seq),
      column((r) => r.prevHash),
      column((r) => r.hash),
      column((r) => r.action),
      column((r) => r.actor),
      column((r) => r.destination),
      column((r) => r.verdict),
      column((r) => r.rule),
      column((r) => r.reason),
      column((r) => r.payloadHash),
      // String() is the shortest round-trip form; Postgres parses it back to the same double.
      column((r) => String(r.cost)),
      column((r) => r.taskId),
      column((r) => r.stepId),
      column((r) => r.envelopeId),
      column((r) => r.atMs),
      lasts.map((r) => r.orgId),
      lasts.map((r) => r.seq),
      lasts.map((r) => r.hash),
      from.map((head) => head.seq),
      from.map((head) => head.hash),
    ],
  );
  return moved.rows.map((r) => r.org_id);
}

const MAX_LIST_LIMIT = 10_000;

/** Rows of one tenant's chain in seq order (or newest first). */
export async function listAudit(db: Queryable, orgId: string, options: ListAuditOptions = {}): Promise<AuditRow[]> {
  const limit = options.limit ?? 100;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `limit must be a whole number from 1 to ${MAX_LIST_LIMIT}`, { details: { path: "limit" } });
  }
  const afterSeq = options.afterSeq ?? 0;
  if (!Number.isSafeInteger(afterSeq) || afterSeq < 0) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, "afterSeq must be a whole number >= 0", { details: { path: "afterSeq" } });
  }
  const beforeSeq = options.beforeSeq ?? null;
  if (beforeSeq !== null && (!Number.isSafeInteger(beforeSeq) || beforeSeq < 1)) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, "beforeSeq must be a whole number >= 1", { details: { path: "beforeSeq" } });
  }
  const result = await db.query<AuditDbRow>(
    `SELECT ${AUDIT_COLUMNS} FROM audit_log
     WHERE org_id = $1 AND seq > $2 AND ($3::text IS NULL OR task_id = $3) AND ($5::bigint IS NULL OR seq < $5)
     ORDER BY seq ${options.newestFirst ? "DESC" : "ASC"} LIMIT $4`,
    [orgId, afterSeq, options.taskId ?? null, limit, beforeSeq],
  );
  return result.rows.map(auditRowFromDb);
}

export const AUDIT_COLUMNS =
  "org_id, seq, prev_hash, hash, action, actor, destination, verdict, rule, reason, payload_hash, cost, task_id, step_id, envelope_id, at_ms";

export interface AuditDbRow {
  org_id: string;
  seq: string | number;
  prev_hash: string;
  hash: string;
  action: string;
  actor: string;
  destination: string;
  verdict: string;
  rule: string;
  reason: string;
  payload_hash: string;
  cost: number;
  task_id: string;
  step_id: string;
  envelope_id: string;
  at_ms: string | number;
}

export function auditRowFromDb(row: AuditDbRow): AuditRow {
  return {
    orgId: row.org_id,
    seq: Number(row.seq),
    prevHash: row.prev_hash,
    hash: row.hash,
    action: row.action,
    actor: row.actor,
    destination: row.destination,
    verdict: row.verdict,
    rule: row.rule,
    reason: row.reason,
    payloadHash: row.payload_hash,
    cost: Number(row.cost),
    taskId: row.task_id,
    stepId: row.step_id,
    envelopeId: row.envelope_id,
    atMs: Number(row.at_ms),
  };
}

/** The head and the highest seq in one statement, so one snapshot (what verification walks up to). */
export async function readChainStart(db: Queryable, orgId: string): Promise<ChainStart> {
  const start = await db.query<{ head_seq: string | null; head_hash: string | null; max_seq: string | null }>(
    `SELECT (SELECT seq FROM audit_heads WHERE org_id = $1) AS head_seq,
            (SELECT hash FROM audit_heads WHERE org_id = $1) AS head_hash,
            (SELECT max(seq) FROM audit_log WHERE org_id = $1) AS max_seq`,
    [orgId],
  );
  const row = start.rows[0];
  const head = row?.head_seq != null ? { seq: Number(row.head_seq), hash: row.head_hash ?? GENESIS_HASH } : undefined;
  return { head, maxSeq: Number(row?.max_seq ?? 0) };
}

export async function readChainPage(db: Queryable, orgId: string, afterSeq: number, untilSeq: number, limit: number): Promise<AuditRow[]> {
  const page = await db.query<AuditDbRow>(`SELECT ${AUDIT_COLUMNS} FROM audit_log WHERE org_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4`, [
    orgId,
    afterSeq,
    untilSeq,
    limit,
  ]);
  return page.rows.map(auditRowFromDb);
}

export async function readHead(db: Queryable, orgId: string): Promise<ChainHead | undefined> {
  const heads = await db.query<{ seq: number | string; hash: string }>("SELECT seq, hash FROM audit_heads WHERE org_id = $1", [orgId]);
  const row = heads.rows[0];
  return row ? { seq: Number(row.seq), hash: row.hash } : undefined;
}

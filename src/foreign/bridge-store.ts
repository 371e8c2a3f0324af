/**
 * Rows of `a2a_bridge` (migrations/0003): the correlation between a governed foreign hop (tenant, task, step,
 * attempt) and the A2A task it opened at the agent. Callers run these as the owner (coordinator, callback route):
 * the bridge id alone names the tenant.
 */
import type { OutboxRow } from "../coordinator/outbox.js";
import type { Queryable } from "../store/db.js";
import type { OutboxEnvelope } from "./foreign-result.js";
import type { ForeignArtifact } from "./a2a/artifacts.js";
import type { ForeignUsage } from "./bridge-transition.js";
import type { PricedBy } from "./pricing.js";

export type BridgeStatus =
  | "pending_send"
  | "dispatched"
  | "working"
  | "completed"
  | "failed"
  | "canceled"
  | "rejected"
  | "timed_out"
  | "send_failed";

/** Statuses in which the bridge still waits for the agent; anything else is resolved and never changes again. */
export const OPEN_BRIDGE_STATUSES: readonly BridgeStatus[] = ["pending_send", "dispatched", "working"];

export interface BridgeRecord {
  id: string;
  orgId: string;
  taskId: string;
  stepId: string;
  attempt: number;
  agentKey: string;
  dialect: "auto" | "1.0" | "0.3" | "mcp";
  foreignTaskId: string | null;
  status: BridgeStatus;
  notificationTokenHash: string;
  tokenKid: string;
  request: unknown;
  clearance: number;
  artifacts: ForeignArtifact[];
  lastState: string | null;
  deadlineMs: number | null;
  /** How the result comes back once sent (null until then). */
  delivery: "push" | "poll" | "call" | null;
  /** When the poller asks the agent next (a polled bridge, or a pushed one whose end must be confirmed). */
  nextPollAt: Date | null;
  /** GetTask calls the poller made for this bridge. */
  polls: number;
  /** Artifacts pushed after the bridge resolved, kept apart from the RESULT already written (bridge-transition.ts). */
  lateArtifacts: ForeignArtifact[];
  createdAt: Date;
  updatedAt: Date;
  resolvedAt: Date | null;
  /** When the send started (the sender writes it); a metered hop's elapsed time runs from here. */
  sentAt: Date | null;
  /** sha256 hex of the canonical JSON of `request`, exactly what may leave (send-fields.ts). */
  sentHash: string | null;
  /** The latest usage the agent reported (pricing.ts); null when none. */
  usage: ForeignUsage | null;
  /** How the resolved hop was priced; null while open, or when nothing was charged (a failed send). */
  pricedBy: PricedBy | null;
  /** W3C traceparent of the hop that dispatched it (tracing on; src/telemetry/foreign-spans.ts). */
  traceparent?: string | null;
}

export const BRIDGE_COLUMNS = `id, org_id, task_id, step_id, attempt, agent_key, dialect, foreign_task_id, status, notification_token_hash,
  token_kid, request, clearance, artifacts, last_state, deadline_ms, delivery, next_poll_at, polls, late_artifacts, created_at, updated_at, resolved_at,
  sent_at, sent_hash, usage, priced_by, traceparent`;

/** The same columns qualified with the alias `b`, for queries that join or update `a2a_bridge b`. */
export const BRIDGE_COLUMNS_OF_B = BRIDGE_COLUMNS.split(",").map((c) => `b.${c.trim()}`).join(", ");

export function toBridge(row: Record<string, unknown>): BridgeRecord {
  return {
    id: row.id as string,
    orgId: row.org_id as string,
    taskId: row.task_id as string,
    stepId: row.step_id as string,
    attempt: row.attempt as number,
    agentKey: row.agent_key as string,
    dialect: row.dialect as BridgeRecord["dialect"],
    foreignTaskId: (row.foreign_task_id as string | null) ?? null,
    status: row.status as BridgeStatus,
    notificationTokenHash: row.notification_token_hash as string,
    tokenKid: row.token_kid as string,
    request: row.request,
    clearance: row.clearance as number,
    artifacts: (row.artifacts as ForeignArtifact[] | null) ?? [],
    lastState: (row.last_state as string | null) ?? null,
    deadlineMs: row.deadline_ms === null || row.deadline_ms === undefined ? null : Number(row.deadline_ms),
    delivery: (row.delivery as BridgeRecord["delivery"] | undefined) ?? null,
    nextPollAt: (row.next_poll_at as Date | null | undefined) ?? null,
    polls: Number(row.polls ?? 0),
    lateArtifacts: (row.late_artifacts as ForeignArtifact[] | null | undefined) ?? [],
    createdAt: row.created_at as Date,
    updatedAt: row.updated_at as Date,
    resolvedAt: (row.resolved_at as Date | null) ?? null,
    sentAt: (row.sent_at as Date | null) ?? null,
    sentHash: (row.sent_hash as string | null) ?? null,
    usage: (row.usage as ForeignUsage | null) ?? null,
    pricedBy: (row.priced_by as PricedBy | null) ?? null,
    traceparent: (row.traceparent as string | null | undefined) ?? null,
  };
}

export interface NewBridge {
  id: string;
  orgId: string;
  taskId: string;
  stepId: string;
  attempt: number;
  agentKey: string;
  dialect: BridgeRecord["dialect"];
  notificationTokenHash: string;
  tokenKid: string;
  request: unknown;
  /** sha256 hex of the canonical JSON of `request` (send-fields.ts). */
  sentHash: string;
  clearance: number;
  /** The dispatching hop's traceparent, when tracing is on. */
  traceparent?: string | undefined;
}

/** Idempotent by id (the hop's envelope id): a replayed hop finds its bridge. */
export async function insertBridge(db: Queryable, bridge: NewBridge): Promise<void> {
  await db.query(
    `INSERT INTO a2a_bridge (id, org_id, task_id, step_id, attempt, agent_key, dialect, status, notification_token_hash, token_kid, request, clearance, sent_hash, traceparent)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending_send', $8, $9, $10, $11, $12, $13) ON CONFLICT (id) DO NOTHING`,
    [bridge.id, bridge.orgId, bridge.taskId, bridge.stepId, bridge.attempt, bridge.agentKey, bridge.dialect, bridge.notificationTokenHash, bridge.tokenKid, JSON.stringify(bridge.request ?? null), bridge.clearance, bridge.sentHash, bridge.traceparent ?? null],
  );
}

const BRIDGE_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether `id` can name a bridge at all (a lowercase UUID); anything else is refused before it reaches SQL. */
export function isBridgeId(id: string): boolean {
  return BRIDGE_ID_RE.test(id);
}

export async function findBridge(db: Queryable, id: string, forUpdate = false): Promise<BridgeRecord | undefined> {
  if (!isBridgeId(id)) return undefined;
  const { rows } = await db.query(`SELECT ${BRIDGE_COLUMNS} FROM a2a_bridge WHERE id = $1${forUpdate ? " FOR UPDATE" : ""}`, [id]);
  return rows[0] ? toBridge(rows[0]) : undefined;
}

/** The bridges of a task, oldest first (for tests, the CLI and operators). */
export async function listBridges(db: Queryable, orgId: string, taskId: string): Promise<BridgeRecord[]> {
  const { rows } = await db.query(`SELECT ${BRIDGE_COLUMNS} FROM a2a_bridge WHERE org_id = $1 AND task_id = $2 ORDER BY created_at, id`, [orgId, taskId]);
  return rows.map(toBridge);
}

export function isOpen(status: BridgeStatus): boolean {
  return OPEN_BRIDGE_STATUSES.includes(status);
}

/** A bridge's new state to write, with the outbox rows (RESULTs) that go with it. */
export interface BridgeWrite {
  bridge: BridgeRecord;
  /** The row version (`xmin`) the new state was computed from; null when the caller holds the row lock. */
  version: string | null;
  results: readonly OutboxEnvelope[];
  /**
   * Make a GetTask due now (`next_poll_at = now()`, poll count reset): the bridge heard its task ended without the
   * artifacts being known for sure, and the poller resolves it from the whole task (bridge-transition.ts).
   */
  pollNow?: boolean;
}

/**
 * Writes bridges and their RESULTs' outbox rows in ONE statement, so a bridge and its RESULT are written together
 * or not at all. A bridge with a `version` is written only if its row is still that version (the callback route's
 * optimistic path); answers which bridges were written and the outbox rows inserted.
 */
export async function writeBridges(db: Queryable, writes: readonly BridgeWrite[]): Promise<{ written: Set<string>; outbox: OutboxRow[] }> {
  if (writes.length === 0) return { written: new Set(), outbox: [] };
  const results = writes.flatMap((w) => w.results.map((r) => ({ bridgeId: w.bridge.id, ...r })));
  const { rows } = await db.query<{ bridge_id: string | null; outbox_id: number | null; envelope_id: string | null }>(
    `WITH u AS (
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::text[], $6::text[], $7::bool[], $13::jsonb[], $14::text[])
         AS u(id, version, status, artifacts, last_state, foreign_task_id, resolved, usage, priced_by)
     ), extra AS (
       SELECT * FROM unnest($1::uuid[], $15::bool[], $16::jsonb[]) AS x(id, poll_now, late_artifacts)
     ), changed AS (
       UPDATE a2a_bridge b SET status = u.status, artifacts = u.artifacts, last_state = u.last_state,
         foreign_task_id = u.foreign_task_id, usage = u.usage, priced_by = u.priced_by, updated_at = now(), late_artifacts = x.late_artifacts,
         -- A resolved bridge keeps the time it resolved (a late artifact written to it later changes nothing else).
         resolved_at = CASE WHEN u.resolved THEN COALESCE(b.resolved_at, now()) ELSE b.resolved_at END,
         claimed_until = CASE WHEN u.resolved THEN NULL ELSE b.claimed_until END,
         next_poll_at = CASE WHEN u.resolved THEN NULL WHEN x.poll_now THEN now() ELSE b.next_poll_at END,
         polls = CASE WHEN x.poll_now AND NOT u.resolved THEN 0 ELSE b.polls END
       FROM u JOIN extra x ON x.id = u.id WHERE b.id = u.id AND (u.version IS NULL OR b.xmin = u.version::xid)
       RETURNING b.id
     ), sent AS (
       INSERT INTO outbox (org_id, stream, envelope_id, envelope)
       SELECT o.org_id, o.stream, o.envelope_id, o.envelope
       FROM unnest($8::uuid[], $9::text[], $10::text[], $11::text[], $12::bytea[]) AS o(bridge_id, org_id, stream, envelope_id, envelope)
       JOIN changed c ON c.id = o.bridge_id
       RETURNING id, envelope_id
     )
     SELECT c.id::text AS bridge_id, NULL::bigint AS outbox_id, NULL::text AS envelope_id FROM changed c
     UNION ALL SELECT NULL, s.id, s.envelope_id FROM sent s`,
    [
      writes.map((w) => w.bridge.id),
      writes.map((w) => w.version),
      writes.map((w) => w.bridge.status),
      writes.map((w) => JSON.stringify(w.bridge.artifacts)),
      writes.map((w) => w.bridge.lastState),
      writes.map((w) => w.bridge.foreignTaskId),
      writes.map((w) => !isOpen(w.bridge.status)),
      results.map((r) => r.bridgeId),
      results.map((r) => r.orgId),
      results.map((r) => r.stream),
      results.map((r) => r.envelopeId),
      results.map((r) => Buffer.from(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength)),
      writes.map((w) => (w.bridge.usage ? JSON.stringify(w.bridge.usage) : null)),
      writes.map((w) => w.bridge.pricedBy),
      writes.map((w) => w.pollNow === true),
      writes.map((w) => JSON.stringify(w.bridge.lateArtifacts)),
    ],
  );
  const byEnvelope = new Map(results.map((r) => [r.envelopeId, r]));
  const createdAtMs = Date.now();
  return {
    written: new Set(rows.flatMap((r) => (r.bridge_id === null ? [] : [r.bridge_id]))),
    outbox: rows.flatMap((r) => {
      const result = r.outbox_id === null ? undefined : byEnvelope.get(r.envelope_id!);
      return result ? [{ id: Number(r.outbox_id), stream: result.stream, bytes: result.bytes, createdAtMs }] : [];
    }),
  };
}

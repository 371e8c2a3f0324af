/**
 * The Postgres adapter of the bridges port (store/bridges/bridge-store.ts): `a2a_bridge` rows, the one statement that
 * writes a bridge with its RESULTs, and the reads that lock or look bridges up for a resume, the callback route and
 * the dead-letter listing. The sender's and the poller's statements are postgres-bridge-sends.ts and -polls.ts, the
 * gateway's status views -views.ts.
 */
import { isBridgeId, isOpen } from "../../core/bridge-status.js";
import type { DeadLetterView } from "../../bus/dead-letters.js";
import type { Queryable } from "../db.js";
import { BRIDGE_COLUMNS, BRIDGE_COLUMNS_OF_B, ratesOf, toBridge } from "./bridge-columns.js";
import type { BridgeRecord, BridgeStore, BridgeWrite, BridgeWriteResult, CallbackTarget, LockedBridge, NewBridge } from "./bridge-store.js";
import { attemptsOver, claimBridges, closeUnsentBridge, markStarted, recordSent, releaseClaim, writeHeartbeat } from "./postgres-bridge-sends.js";
import { claimDuePolls, claimQuiet, lockMovedOn, markTimedOut, reschedulePoll, uncountPoll } from "./postgres-bridge-polls.js";
import { countOpenAgentBridges, readRecentAgentBridges, readTaskBridgeSummaries } from "./postgres-bridge-views.js";

export type { BridgeRecord } from "./bridge-store.js";

/** The step error code of a foreign hop given up on without re-sending (core/decide.ts). */
const FOREIGN_NOT_RETRIED = "FOREIGN_NOT_RETRIED";

/** Idempotent by id (the hop's envelope id): a replayed hop finds its bridge. */
export async function insertBridge(db: Queryable, bridge: NewBridge): Promise<void> {
  await db.query(
    `INSERT INTO a2a_bridge (id, org_id, task_id, step_id, attempt, agent_key, dialect, status, notification_token_hash, token_kid, request, clearance, sent_hash, traceparent)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending_send', $8, $9, $10, $11, $12, $13) ON CONFLICT (id) DO NOTHING`,
    [bridge.id, bridge.orgId, bridge.taskId, bridge.stepId, bridge.attempt, bridge.agentKey, bridge.dialect, bridge.notificationTokenHash, bridge.tokenKid, JSON.stringify(bridge.request ?? null), bridge.clearance, bridge.sentHash, bridge.traceparent ?? null],
  );
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

/**
 * Writes bridges and their RESULTs' outbox rows in ONE statement, so a bridge and its RESULT are written together
 * or not at all. A bridge with a `version` is written only if its row is still that version (the callback route's
 * optimistic path); answers which bridges were written and the outbox rows inserted.
 */
export async function writeBridges(db: Queryable, writes: readonly BridgeWrite[]): Promise<BridgeWriteResult> {
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

/** Locks the bridges in the order given, with each agent's rates (the registry's rates price a hop whose agent reports no cost). */
export async function lockBridgesWithRates(tx: Queryable, ids: readonly string[]): Promise<LockedBridge[]> {
  const { rows } = await tx.query(
    `SELECT ${BRIDGE_COLUMNS_OF_B}, coalesce(a.cost_estimate, 0) AS cost, coalesce(a.cost_per_second, 0) AS cost_per_second
     FROM a2a_bridge b LEFT JOIN foreign_agents a ON a.org_id = b.org_id AND a.agent_key = b.agent_key
     WHERE b.id = ANY($1::uuid[]) ORDER BY b.id FOR UPDATE OF b`,
    [ids],
  );
  return rows.map((row) => ({ bridge: toBridge(row), rates: ratesOf(row) }));
}

/** The agent has the task though our send's answer failed: the poller asks it (due now) rather than failing the step. */
export async function handBridgeToPoller(tx: Queryable, id: string): Promise<void> {
  await tx.query(
    `UPDATE a2a_bridge SET status = CASE WHEN status = 'pending_send' THEN 'dispatched' ELSE status END, next_poll_at = now(),
       claimed_until = NULL, updated_at = now() WHERE id = $1`,
    [id],
  );
}

/** The bridges, the tenant link key each one's URL token must verify with and the agent's rates, in one read. */
export async function findCallbackTargets(db: Queryable, ids: readonly string[]): Promise<CallbackTarget[]> {
  const { rows } = await db.query(
    `SELECT ${BRIDGE_COLUMNS_OF_B}, b.xmin::text AS version, k.kid AS key_kid, k.secret AS key_secret, k.retired_at AS key_retired_at,
            coalesce(a.cost_estimate, 0) AS cost, coalesce(a.cost_per_second, 0) AS cost_per_second
     FROM a2a_bridge b
     LEFT JOIN link_keys k ON k.org_id = b.org_id AND k.kid = b.token_kid
     LEFT JOIN foreign_agents a ON a.org_id = b.org_id AND a.agent_key = b.agent_key
     WHERE b.id = ANY($1::uuid[])`,
    [ids],
  );
  return rows.map((row) => {
    const key = row.key_kid ? { kid: row.key_kid as string, secret: row.key_secret as Buffer, retiredAt: row.key_retired_at ? (row.key_retired_at as Date).toISOString() : null } : undefined;
    return { bridge: toBridge(row), key, rates: ratesOf(row), version: row.version as string };
  });
}

/**
 * Foreign hops given up on without re-sending (foreign/dead-letters.ts), oldest first, shown beside the bus's dead
 * letters under the stream `foreign:KEY`; `agentKey` narrows to one agent key (of any tenant).
 */
export async function listForeignDeadLetters(db: Queryable, options: { agentKey: string | null; limit: number }): Promise<DeadLetterView[]> {
  const { rows } = await db.query<{ id: string; org_id: string; task_id: string; step_id: string; agent_key: string; attempt: number; message: string | null; at: Date; bytes: number }>(
    `SELECT b.id, b.org_id, b.task_id, b.step_id, b.agent_key, b.attempt, s.error ->> 'message' AS message, s.updated_at AS at,
            octet_length(b.request::text) AS bytes
     FROM steps s JOIN a2a_bridge b ON b.task_id = s.task_id AND b.step_id = s.step_id AND b.attempt = s.attempt
     WHERE s.status = 'failed' AND (s.error ->> 'code') = '${FOREIGN_NOT_RETRIED}' AND ($2::text IS NULL OR b.agent_key = $2)
     ORDER BY s.updated_at LIMIT $1`,
    [options.limit, options.agentKey],
  );
  return rows.map((row) => ({
    stream: `foreign:${row.agent_key}`,
    id: row.id,
    originalId: row.id,
    reason: `${FOREIGN_NOT_RETRIED}: ${row.message ?? ""}`,
    deliveries: row.attempt,
    atMs: row.at.getTime(),
    bytes: row.bytes,
    envelope: { id: row.id, kind: "WORK", orgId: row.org_id, taskId: row.task_id, stepId: row.step_id },
  }));
}

export function createPostgresBridgeStore(): BridgeStore {
  return {
    insert: insertBridge,
    find: findBridge,
    list: listBridges,
    write: writeBridges,
    lockWithRates: lockBridgesWithRates,
    handToPoller: handBridgeToPoller,
    callbackTargets: findCallbackTargets,
    listNotRetried: listForeignDeadLetters,
    claimForSend: claimBridges,
    attemptsOver,
    closeUnsent: closeUnsentBridge,
    releaseClaim,
    recordSent,
    markStarted,
    heartbeat: writeHeartbeat,
    lockMovedOn,
    markTimedOut,
    claimQuiet,
    claimDuePolls,
    uncountPoll,
    reschedulePoll,
    summariesOfTask: readTaskBridgeSummaries,
    recentOfAgent: readRecentAgentBridges,
    openOfAgent: countOpenAgentBridges,
  };
}

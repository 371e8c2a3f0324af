/**
 * Moving bridges on from what we learnt about their foreign tasks — pushes (callback route, batched), a poll (sweep)
 * or a failed send (sender) — in ONE short transaction per batch: the bridges are locked (in id order), changed,
 * and for each one that resolves a RESULT envelope is written to the outbox for the coordinator's inbox
 * (foreign-result.ts). Publishing follows the commit; the coordinator then resumes the step in its own batches.
 *
 * What an observation does to a bridge is bridge-transition.ts; a resolved bridge's RESULT is `a2a:<bridge>:final`,
 * which the coordinator deduplicates by its id should the relay publish it twice. The callback route takes an
 * optimistic path first (callback-intake.ts) and falls back to this one when a bridge changed under it.
 */
import type { StepError } from "../coordinator/model.js";
import { insertOutbox, type OutboxRow } from "../coordinator/outbox.js";
import { withTransaction, type Pool, type PoolClient } from "../store/db.js";
import { silentLogger, type Logger } from "../logger.js";
import { BRIDGE_COLUMNS, findBridge, isOpen, isBridgeId, toBridge, type BridgeRecord } from "./bridge-store.js";
import { observe, resultFor, type ForeignObservation, type ObservationOutcome, type Resolution } from "./bridge-transition.js";
import { foreignResultEnvelope, type OutboxEnvelope } from "./foreign-result.js";

export type { ForeignObservation, ObservationOutcome } from "./bridge-transition.js";

export interface BridgeResumeDeps {
  pool: Pool;
  /** Publishes the RESULTs a batch committed; without it the outbox relay does (within its stale interval). */
  publisher?: { publish(rows: readonly OutboxRow[]): Promise<void> };
  /** The bus's payload cap: a larger output fails the step with FOREIGN_OUTPUT_TOO_LARGE. */
  maxPayloadBytes: number;
  logger?: Logger;
  clock?: () => number;
}

export interface ObservationRequest {
  bridgeId: string;
  observation: ForeignObservation;
}

const RETRYABLE_PG_CODES = new Set(["40P01", "40001"]);

export async function inTransactionWithRetry<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await withTransaction(pool, fn);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (attempt >= 5 || !code || !RETRYABLE_PG_CODES.has(code)) throw error;
    }
  }
}

/** Applies one observation; see the module comment. */
export async function applyObservation(deps: BridgeResumeDeps, bridgeId: string, observation: ForeignObservation): Promise<ObservationOutcome> {
  return (await applyObservations(deps, [{ bridgeId, observation }]))[0]!;
}

/** A bridge as the batch changes it, and whether it must be written. */
interface Working {
  bridge: BridgeRecord;
  dirty: boolean;
}

/**
 * Applies observations in order, several per bridge allowed, in one transaction; answers one outcome each.
 * Throws (nothing applied) on a database error — e.g. a push claiming a foreign task id another bridge of the
 * tenant owns (unique violation 23505): the batcher then re-runs the items one by one.
 */
export async function applyObservations(deps: BridgeResumeDeps, requests: readonly ObservationRequest[]): Promise<ObservationOutcome[]> {
  const now = (deps.clock ?? Date.now)();
  const { outcomes, rows } = await inTransactionWithRetry(deps.pool, async (client) => {
    const bridges = await lockBridges(client, requests.map((r) => r.bridgeId));
    const results: OutboxEnvelope[] = [];
    const resolved: Array<{ working: Working; end: Resolution }> = [];
    const outcomes = requests.map(({ bridgeId, observation }): ObservationOutcome => {
      const working = bridges.get(bridgeId);
      if (!working) return "unknown";
      const step = observe(working.bridge, observation, deps.maxPayloadBytes);
      if (step.bridge !== working.bridge) {
        working.bridge = step.bridge;
        working.dirty = true;
      }
      if (step.end) resolved.push({ working, end: step.end });
      return step.outcome;
    });
    await saveBridges(client, [...bridges.values()].filter((w) => w.dirty).map((w) => w.bridge));
    if (resolved.length > 0) {
      const costs = await agentCosts(client, resolved.map((r) => r.working.bridge));
      for (const { working, end } of resolved) {
        const bridge = working.bridge;
        results.push(resultFor(bridge, end, costs.get(`${bridge.orgId}\u0000${bridge.agentKey}`) ?? 0, deps.maxPayloadBytes, now));
      }
    }
    return { outcomes, rows: await insertOutbox(client, results) };
  });
  await publish(deps, rows);
  return outcomes;
}

/** The send never reached the agent (card, egress, breaker, retries exhausted): the step fails closed, once. */
export async function failSend(deps: BridgeResumeDeps, bridgeId: string, error: StepError): Promise<boolean> {
  const now = (deps.clock ?? Date.now)();
  const rows = await inTransactionWithRetry(deps.pool, async (client) => {
    const bridge = await findBridge(client, bridgeId, true);
    // A push that raced the failure may have resolved it, or the sweep closed it: then there is nothing to fail.
    if (!bridge || bridge.status !== "pending_send") return undefined;
    await client.query(
      `UPDATE a2a_bridge SET status = 'send_failed', last_state = $2, resolved_at = now(), updated_at = now(), claimed_until = NULL WHERE id = $1`,
      [bridge.id, error.code],
    );
    // Nothing was sent, so nothing is charged.
    return insertOutbox(client, [foreignResultEnvelope(bridge, "send-failed", { ok: false, output: null, error, cost: 0 }, deps.maxPayloadBytes, now)]);
  });
  if (rows) await publish(deps, rows);
  return rows !== undefined;
}

async function lockBridges(client: PoolClient, ids: readonly string[]): Promise<Map<string, Working>> {
  const wanted = [...new Set(ids.filter(isBridgeId))].sort();
  if (wanted.length === 0) return new Map();
  // Id order: two batches locking overlapping bridges queue instead of deadlocking.
  const { rows } = await client.query(`SELECT ${BRIDGE_COLUMNS} FROM a2a_bridge WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`, [wanted]);
  return new Map(rows.map((row) => [row.id as string, { bridge: toBridge(row), dirty: false }]));
}

async function saveBridges(client: PoolClient, bridges: readonly BridgeRecord[]): Promise<void> {
  if (bridges.length === 0) return;
  await client.query(
    `UPDATE a2a_bridge b SET status = u.status, artifacts = u.artifacts, last_state = u.last_state,
       foreign_task_id = u.foreign_task_id, updated_at = now(),
       resolved_at = CASE WHEN u.resolved THEN now() ELSE b.resolved_at END,
       claimed_until = CASE WHEN u.resolved THEN NULL ELSE b.claimed_until END
     FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::text[], $5::text[], $6::bool[]) AS u(id, status, artifacts, last_state, foreign_task_id, resolved)
     WHERE b.id = u.id`,
    [
      bridges.map((b) => b.id),
      bridges.map((b) => b.status),
      bridges.map((b) => JSON.stringify(b.artifacts)),
      bridges.map((b) => b.lastState),
      bridges.map((b) => b.foreignTaskId),
      bridges.map((b) => !isOpen(b.status)),
    ],
  );
}

/** The registry's per-call estimate is the best actual we have for an answered call. */
async function agentCosts(client: PoolClient, bridges: readonly BridgeRecord[]): Promise<Map<string, number>> {
  const { rows } = await client.query<{ org_id: string; agent_key: string; cost_estimate: number }>(
    `SELECT a.org_id, a.agent_key, a.cost_estimate FROM foreign_agents a
     JOIN unnest($1::text[], $2::text[]) AS q(org_id, agent_key) ON a.org_id = q.org_id AND a.agent_key = q.agent_key`,
    [bridges.map((b) => b.orgId), bridges.map((b) => b.agentKey)],
  );
  return new Map(rows.map((r) => [`${r.org_id}\u0000${r.agent_key}`, r.cost_estimate]));
}

async function publish(deps: BridgeResumeDeps, rows: readonly OutboxRow[]): Promise<void> {
  if (rows.length > 0 && deps.publisher) await deps.publisher.publish(rows);
  else if (rows.length > 0) (deps.logger ?? silentLogger).debug({ rows: rows.length }, "foreign RESULTs left to the outbox relay");
}

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
import type { StepError } from "../core/model.js";
import type { EnvelopeSigner } from "../bus/auth/bus-auth.js";
import type { OutboxRow } from "../store/engine/engine-store.js";
import { withTransactionRetry, type Pool, type PoolClient } from "../store/db.js";
import type { BridgeRecord, BridgeStore } from "../store/bridges/bridge-store.js";
import { isBridgeId, isOpen } from "../core/bridge-status.js";
import { silentLogger, type Logger } from "../logger.js";
import { observe, resultFor, type ForeignObservation, type ObservationOutcome, type Transition } from "./bridge-transition.js";
import type { ForeignArtifact } from "./a2a/artifacts.js";
import type { Metrics } from "../metrics/metrics.js";
import { foreignResultEnvelope, type OutboxEnvelope } from "./foreign-result.js";
import type { HopRates } from "./pricing.js";

export type { ForeignObservation, ObservationOutcome } from "./bridge-transition.js";

export interface BridgeResumeDeps {
  pool: Pool;
  /** The bridges port (store/bridges/bridge-store.ts); every statement runs on `pool` or a transaction of it. */
  bridges: BridgeStore;
  /** Publishes the RESULTs a batch committed; without it the outbox relay does (within its stale interval). */
  publisher?: { publish(rows: readonly OutboxRow[]): Promise<void> };
  /** Signs the RESULTs as the gateway identity (`runtime.busAuth.lazySigner(GATEWAY_SENDER)`). */
  signer: EnvelopeSigner;
  /** The bus's payload cap: a larger output fails the step with FOREIGN_OUTPUT_TOO_LARGE. */
  maxPayloadBytes: number;
  /** The deployment's shard count: RESULTs go straight to the tenant's shard inbox (else the shared one). */
  shardCount?: number;
  logger?: Logger;
  clock?: () => number;
  /** Late artifacts (pushed after their bridge resolved) are counted here. */
  metrics?: Pick<Metrics, "a2aLateArtifacts">;
}

export interface ObservationRequest {
  bridgeId: string;
  observation: ForeignObservation;
}

/** Applies one observation; see the module comment. */
export async function applyObservation(deps: BridgeResumeDeps, bridgeId: string, observation: ForeignObservation): Promise<ObservationOutcome> {
  return (await applyObservations(deps, [{ bridgeId, observation }]))[0]!;
}

export interface ApplyOptions {
  /**
   * Runs first in the same transaction (the sender records its send here, so the send and its answer are written
   * together or not at all); what it throws rolls everything back.
   */
  first?: (client: PoolClient) => Promise<void>;
}

/** A locked bridge as the batch changes it: `start` is the row as read, `results` the RESULTs it produced. */
interface Working {
  start: BridgeRecord;
  bridge: BridgeRecord;
  rates: HopRates;
  results: OutboxEnvelope[];
  /** An observation asked for a GetTask now (a `completed` push whose artifacts must be confirmed). */
  pollNow: boolean;
  late: ForeignArtifact[];
}

/**
 * Applies observations in order, several per bridge allowed, in one transaction; answers one outcome each.
 * Throws (nothing applied) on a database error — e.g. a push claiming a foreign task id another bridge of the
 * tenant owns (unique violation 23505): the batcher then re-runs the items one by one.
 */
export async function applyObservations(deps: BridgeResumeDeps, requests: readonly ObservationRequest[], options: ApplyOptions = {}): Promise<ObservationOutcome[]> {
  const now = (deps.clock ?? Date.now)();
  const { outcomes, outbox, late } = await withTransactionRetry(deps.pool, async (client) => {
    if (options.first) await options.first(client);
    const bridges = await lockBridges(deps.bridges, client, requests.map((r) => r.bridgeId));
    const outcomes = requests.map(({ bridgeId, observation }): ObservationOutcome => {
      const working = bridges.get(bridgeId);
      if (!working) return "unknown";
      const step = observe(working.bridge, observation, deps.maxPayloadBytes);
      working.bridge = step.bridge;
      if (step.end) {
        const priced = resultFor(step.bridge, step.end, working.rates, deps, now);
        working.bridge = priced.bridge;
        working.results.push(priced.result);
      }
      noteTransition(working, step);
      return step.outcome;
    });
    const changed = [...bridges.values()].filter((w) => w.bridge !== w.start);
    // The rows are locked, so no version check: every write lands.
    const { outbox } = await deps.bridges.write(client, changed.map((w) => ({ bridge: w.bridge, version: null, results: w.results, pollNow: w.pollNow && isOpen(w.bridge.status) })));
    return { outcomes, outbox, late: [...bridges.values()].filter((w) => w.late.length > 0) };
  });
  for (const w of late) reportLate(deps, w.bridge, w.late);
  await publish(deps, outbox);
  return outcomes;
}

/** Folds what one transition asks of the write into the bridge's batch entry. */
export function noteTransition(entry: { pollNow: boolean; late: ForeignArtifact[] }, step: Transition): void {
  if (step.pollNow) entry.pollNow = true;
  if (step.late) entry.late.push(...step.late);
}

/**
 * Artifacts pushed after their bridge resolved: the step already has its RESULT, so they are kept on the bridge
 * (`late_artifacts`), counted and logged with the ids an operator needs — never silently dropped. Called after the
 * commit that stored them.
 */
export function reportLate(deps: Pick<BridgeResumeDeps, "logger" | "metrics">, bridge: BridgeRecord, late: readonly ForeignArtifact[]): void {
  deps.metrics?.a2aLateArtifacts.inc(late.length);
  (deps.logger ?? silentLogger).warn(
    { bridgeId: bridge.id, orgId: bridge.orgId, taskId: bridge.taskId, stepId: bridge.stepId, agent: bridge.agentKey, foreignTaskId: bridge.foreignTaskId, artifactIds: late.map((a) => a.artifactId), status: bridge.status },
    "foreign artifacts arrived after the bridge resolved; kept in late_artifacts, not in the step's output",
  );
}

/**
 * The send failed (card, egress, breaker, retries exhausted): the attempt fails closed, once. `reached`: whether a
 * request may have reached the agent; when none did, the RESULT says so (`not-sent`) and the step's retries apply.
 */
export async function failSend(deps: BridgeResumeDeps, bridgeId: string, error: StepError, reached = true): Promise<boolean> {
  const now = (deps.clock ?? Date.now)();
  const outbox = await withTransactionRetry(deps.pool, async (client) => {
    const bridge = await deps.bridges.find(client, bridgeId, true);
    // A push that raced the failure may have resolved it, or the sweep closed it: then there is nothing to fail.
    if (!bridge || !isOpen(bridge.status)) return undefined;
    if (bridge.foreignTaskId !== null) {
      // The agent has the task (a push named it before our send's answer failed, e.g. a blocking agent's answer
      // timed out): the task may well finish, so the poller asks it rather than failing the step it may complete.
      await deps.bridges.handToPoller(client, bridgeId);
      (deps.logger ?? silentLogger).warn({ bridgeId, orgId: bridge.orgId, taskId: bridge.taskId, stepId: bridge.stepId, foreignTaskId: bridge.foreignTaskId, code: error.code }, "foreign send failed after the agent named its task; handed to the poller");
      return [];
    }
    if (bridge.status !== "pending_send") return undefined;
    // Nothing was sent, so nothing is charged.
    const result = foreignResultEnvelope(bridge, reached ? "send-failed" : "not-sent", { ok: false, output: null, error, cost: 0 }, deps, now);
    return (await deps.bridges.write(client, [{ bridge: { ...bridge, status: "send_failed", lastState: error.code }, version: null, results: [result] }])).outbox;
  });
  if (outbox) await publish(deps, outbox);
  return outbox !== undefined && outbox.length > 0;
}

/** Locks the bridges in id order (two batches on overlapping bridges queue instead of deadlocking), with each agent's rates. */
async function lockBridges(bridges: BridgeStore, client: PoolClient, ids: readonly string[]): Promise<Map<string, Working>> {
  const wanted = [...new Set(ids.filter(isBridgeId))].sort();
  if (wanted.length === 0) return new Map();
  // The registry's rates price a hop whose agent reports no cost (pricing.ts).
  const locked = await bridges.lockWithRates(client, wanted);
  return new Map(locked.map(({ bridge, rates }) => [bridge.id, { start: bridge, bridge, rates, results: [], pollNow: false, late: [] }]));
}

async function publish(deps: BridgeResumeDeps, rows: readonly OutboxRow[]): Promise<void> {
  if (rows.length > 0 && deps.publisher) await deps.publisher.publish(rows);
  else if (rows.length > 0) (deps.logger ?? silentLogger).debug({ rows: rows.length }, "foreign RESULTs left to the outbox relay");
}

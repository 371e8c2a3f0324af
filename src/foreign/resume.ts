/**
 * Moving a bridge on from what we learnt about its foreign task — a push (callback route), a poll (sweep) or a failed
 * send (sender) — in ONE transaction with the engine: the bridge row is locked first, then the engine locks the task.
 *
 * A non-terminal state updates the bridge (status, last state, artifacts merged). A terminal state — and the
 * interrupted states `input-required` / `auth-required`, which we cannot serve yet — resolves the bridge and resumes
 * the step through the engine as a RESULT with event id `a2a:<bridge>:final` (dedupe), audited as its own edge with
 * actor `foreign:<agent>`. A resolved bridge never changes again, so duplicates and late pushes change nothing.
 */
import { createHash } from "node:crypto";
import type { Engine, ApplyResult } from "../coordinator/engine.js";
import type { StepError } from "../coordinator/model.js";
import type { OutboxRow } from "../coordinator/outbox.js";
import { withTransaction, type Pool, type PoolClient } from "../store/db.js";
import { silentLogger, type Logger } from "../logger.js";
import { foreignOutput, mergeArtifacts, type ForeignArtifact } from "./a2a/artifacts.js";
import { isInterruptedForeignState, isTerminalForeignState, type ForeignTaskState } from "./a2a/task-state.js";
import { findBridge, isOpen, type BridgeRecord, type BridgeStatus } from "./bridge-store.js";
import { findForeignAgent } from "./registry.js";

export interface BridgeResumeDeps {
  pool: Pool;
  engine: Engine;
  /** Publishes what a resume committed (the next step's WORK); without it the outbox relay does. */
  publisher?: { publish(rows: readonly OutboxRow[]): Promise<void> };
  logger?: Logger;
}

/** What a push or a poll says about the foreign task. */
export interface ForeignObservation {
  foreignTaskId: string;
  state?: ForeignTaskState;
  artifacts: ForeignArtifact[];
  message?: string;
}

export type ObservationOutcome = "updated" | "resumed" | "ignored" | "mismatch" | "unknown";

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

/** Applies an observation; see the module comment. */
export async function applyObservation(deps: BridgeResumeDeps, bridgeId: string, observation: ForeignObservation): Promise<ObservationOutcome> {
  const { outcome, applied } = await inTransactionWithRetry(deps.pool, async (client) => {
    const bridge = await findBridge(client, bridgeId, true);
    if (!bridge) return { outcome: "unknown" as const, applied: undefined };
    if (!isOpen(bridge.status)) return { outcome: "ignored" as const, applied: undefined };
    if (bridge.foreignTaskId !== null && bridge.foreignTaskId !== observation.foreignTaskId) return { outcome: "mismatch" as const, applied: undefined };
    const artifacts = mergeArtifacts(bridge.artifacts, observation.artifacts);
    const state = observation.state;
    if (!isTerminalForeignState(state) && !isInterruptedForeignState(state)) {
      const status: BridgeStatus = state === "working" || bridge.status === "working" ? "working" : bridge.status === "pending_send" ? "pending_send" : "dispatched";
      await client.query(
        `UPDATE a2a_bridge SET status = $2, artifacts = $3, last_state = COALESCE($4, last_state), foreign_task_id = COALESCE(foreign_task_id, $5), updated_at = now()
         WHERE id = $1`,
        [bridge.id, status, JSON.stringify(artifacts), state ?? null, observation.foreignTaskId],
      );
      return { outcome: "updated" as const, applied: undefined };
    }
    const applied = await resolveBridge(client, deps, bridge, { state: state!, artifacts, message: observation.message, foreignTaskId: observation.foreignTaskId });
    return { outcome: "resumed" as const, applied };
  });
  if (applied) await publish(deps, applied);
  return outcome;
}

/** Resolves an open bridge whose foreign task ended (or was interrupted), resuming the step. Inside the caller's transaction. */
async function resolveBridge(
  client: PoolClient,
  deps: BridgeResumeDeps,
  bridge: BridgeRecord,
  end: { state: ForeignTaskState; artifacts: ForeignArtifact[]; message: string | undefined; foreignTaskId: string },
): Promise<ApplyResult> {
  const status: BridgeStatus = end.state === "completed" || end.state === "canceled" || end.state === "rejected" ? end.state : "failed";
  await client.query(
    `UPDATE a2a_bridge SET status = $2, artifacts = $3, last_state = $4, foreign_task_id = COALESCE(foreign_task_id, $5), resolved_at = now(),
       updated_at = now(), claimed_until = NULL
     WHERE id = $1`,
    [bridge.id, status, JSON.stringify(end.artifacts), end.state, end.foreignTaskId],
  );
  const ok = end.state === "completed";
  const output = ok ? foreignOutput(end.artifacts) : null;
  const error = ok ? null : stepErrorFor(bridge.agentKey, end.state, end.message);
  return resumeStep(client, deps, bridge, `a2a:${bridge.id}:final`, { ok, output, error });
}

/** The send never reached the agent (card, egress, breaker, retries exhausted): the step fails closed, once. */
export async function failSend(deps: BridgeResumeDeps, bridgeId: string, error: StepError): Promise<boolean> {
  const applied = await inTransactionWithRetry(deps.pool, async (client) => {
    const bridge = await findBridge(client, bridgeId, true);
    // A push that raced the failure may have resolved it, or the sweep closed it: then there is nothing to fail.
    if (!bridge || bridge.status !== "pending_send") return undefined;
    await client.query(
      `UPDATE a2a_bridge SET status = 'send_failed', last_state = $2, resolved_at = now(), updated_at = now(), claimed_until = NULL WHERE id = $1`,
      [bridge.id, error.code],
    );
    return resumeStep(client, deps, bridge, `a2a:${bridge.id}:send-failed`, { ok: false, output: null, error });
  });
  if (applied) await publish(deps, applied);
  return applied !== undefined;
}

async function resumeStep(
  client: PoolClient,
  deps: BridgeResumeDeps,
  bridge: BridgeRecord,
  eventId: string,
  outcome: { ok: boolean; output: unknown; error: StepError | null },
): Promise<ApplyResult> {
  const agent = await findForeignAgent(client, bridge.orgId, bridge.agentKey);
  const outputJson = JSON.stringify(outcome.ok ? (outcome.output ?? null) : outcome.error);
  const result = await deps.engine.applyInTransaction(client, [
    {
      orgId: bridge.orgId,
      taskId: bridge.taskId,
      dedupe: true,
      event: {
        type: "result",
        eventId,
        stepId: bridge.stepId,
        attempt: bridge.attempt,
        actor: `foreign:${bridge.agentKey}`,
        ok: outcome.ok,
        output: outcome.output,
        error: outcome.error,
        // The registry's per-call estimate is the best actual we have; a failed send cost nothing.
        cost: outcome.ok || eventId.endsWith(":final") ? (agent?.costEstimate ?? 0) : 0,
        payloadHash: createHash("sha256").update(outputJson).digest("hex"),
      },
    },
  ]);
  if (result.ignored.length > 0) {
    (deps.logger ?? silentLogger).info({ bridgeId: bridge.id, taskId: bridge.taskId, stepId: bridge.stepId, reason: result.ignored[0]!.reason }, "foreign result not applied: the step moved on");
  }
  return result;
}

function stepErrorFor(agentKey: string, state: ForeignTaskState, message: string | undefined): StepError {
  const why = message ? `: ${message}` : "";
  switch (state) {
    case "canceled":
      return { code: "FOREIGN_CANCELED", message: `foreign agent ${agentKey} canceled the task${why}`, retryable: false };
    case "rejected":
      return { code: "FOREIGN_REJECTED", message: `foreign agent ${agentKey} rejected the task${why}`, retryable: false };
    case "input_required":
      return { code: "FOREIGN_INPUT_REQUIRED", message: `foreign agent ${agentKey} asks for more input, which Switchyard cannot provide yet; the step fails closed${why}`, retryable: false };
    case "auth_required":
      return { code: "FOREIGN_AUTH_REQUIRED", message: `foreign agent ${agentKey} asks for authentication, which Switchyard cannot provide yet; the step fails closed${why}`, retryable: false };
    default:
      return { code: "FOREIGN_FAILED", message: `foreign agent ${agentKey} failed the task${why}`, retryable: false };
  }
}

async function publish(deps: BridgeResumeDeps, applied: ApplyResult): Promise<void> {
  if (applied.outbox.length > 0 && deps.publisher) await deps.publisher.publish(applied.outbox);
}

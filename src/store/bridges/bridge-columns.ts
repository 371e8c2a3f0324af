/**
 * The columns of `a2a_bridge` every bridge query reads, and the row → BridgeRecord mapping the bridges adapter
 * (postgres-bridge-store.ts, -sends.ts, -polls.ts) shares.
 */
import type { BridgeStatus } from "../../core/bridge-status.js";
import type { ForeignArtifact } from "../../foreign/a2a/artifacts.js";
import type { ForeignUsage } from "../../foreign/bridge-transition.js";
import type { HopRates, PricedBy } from "../../foreign/pricing.js";
import type { BridgeRecord } from "./bridge-store.js";

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

/** The pricing columns a lookup joined from `foreign_agents` (`cost`, `cost_per_second`). */
export function ratesOf(row: Record<string, unknown>): HopRates {
  return { costEstimate: Number(row.cost), costPerSecond: Number(row.cost_per_second) };
}


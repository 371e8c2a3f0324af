/**
 * What TaskService.Get and Watch add to each step for the console: its attempts (read back from the task's audit
 * rows, which record every governed hop and every outcome), its delegation links, and its foreign bridges.
 *
 * The audit chain is the record of what happened, so the timeline is folded from it rather than kept twice:
 * a hop row opens an attempt (`allow`: running; `requires_approval`: awaiting approval; `deny`: denied, ended),
 * an `approval` row decides the waiting one (the approved hop's own row then continues that attempt), and
 * `result`, `timeout` and `cancel` rows end it.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ForeignBridgeSchema } from "../gen/switchyard/api/v1/foreign_pb.js";
import type { StepAttemptSchema, StepSchema } from "../gen/switchyard/api/v1/tasks_pb.js";
import type { BridgeViews } from "../store/bridges/bridge-store.js";
import type { Queryable } from "../store/db.js";
import type { AuditStepRow, TaskReadStore } from "../store/tasks/task-read-store.js";
import { bridgeToProto } from "./convert/bridges.js";
import { toTimestamp } from "./convert/values.js";

const HOP_ACTIONS = new Set(["dispatch", "sub_query", "a2a_egress"]);

export type { AuditStepRow } from "../store/tasks/task-read-store.js";

export interface AttemptView {
  attempt: number;
  action: string;
  destination: string;
  dispatchedAtMs: number;
  finishedAtMs: number | null;
  outcome: "running" | "awaiting_approval" | "approved" | "completed" | "failed" | "timed_out" | "denied" | "cancelled";
  verdict: string;
  rule: string;
  reason: string;
  cost: number;
  seq: number;
  approvedBy: string;
}

function end(attempt: AttemptView, outcome: AttemptView["outcome"], row: AuditStepRow): void {
  attempt.outcome = outcome;
  attempt.finishedAtMs = row.atMs;
  attempt.reason = row.reason;
  attempt.cost += row.cost;
}

/** The attempts of every step of a task, from its audit rows in chain order. Pure. */
export function foldAttempts(rows: readonly AuditStepRow[]): Map<string, AttemptView[]> {
  const byStep = new Map<string, AttemptView[]>();
  const open = (stepId: string): AttemptView | undefined => {
    const last = byStep.get(stepId)?.at(-1);
    return last && last.finishedAtMs === null ? last : undefined;
  };
  for (const row of rows) {
    const current = row.stepId === "" ? undefined : open(row.stepId);
    if (HOP_ACTIONS.has(row.action)) {
      if (current?.outcome === "approved") {
        // The approved hop governed again: the same attempt, now sent (or denied after all).
        Object.assign(current, { dispatchedAtMs: row.atMs, verdict: row.verdict, rule: row.rule, seq: row.seq, outcome: "running", cost: current.cost + row.cost });
        if (row.verdict === "deny") end(current, "denied", { ...row, cost: 0 });
        continue;
      }
      const list = byStep.get(row.stepId) ?? [];
      const attempt: AttemptView = {
        attempt: list.length + 1,
        action: row.action,
        destination: row.destination,
        dispatchedAtMs: row.atMs,
        finishedAtMs: null,
        outcome: row.verdict === "requires_approval" ? "awaiting_approval" : "running",
        verdict: row.verdict,
        rule: row.rule,
        reason: "",
        cost: row.cost,
        seq: row.seq,
        approvedBy: "",
      };
      if (row.verdict === "deny") end(attempt, "denied", { ...row, cost: 0 });
      list.push(attempt);
      byStep.set(row.stepId, list);
    } else if (row.action === "approval" && current?.outcome === "awaiting_approval") {
      current.approvedBy = row.actor;
      if (row.verdict === "approved") current.outcome = "approved";
      else end(current, "denied", row);
    } else if (row.action === "result" && current) {
      end(current, row.verdict === "accepted" ? "completed" : "failed", row);
    } else if (row.action === "timeout" && current) {
      end(current, "timed_out", row);
    } else if (row.action === "cancel") {
      for (const attempts of byStep.values()) {
        const last = attempts.at(-1);
        if (last && last.finishedAtMs === null) end(last, "cancelled", { ...row, cost: 0 });
      }
    }
  }
  return byStep;
}

function attemptToProto(a: AttemptView): MessageInitShape<typeof StepAttemptSchema> {
  return {
    attempt: a.attempt,
    action: a.action,
    destination: a.destination,
    dispatchedAt: toTimestamp(a.dispatchedAtMs),
    ...(a.finishedAtMs !== null ? { finishedAt: toTimestamp(a.finishedAtMs) } : {}),
    // `approved` is a moment between two rows of one transaction; outside it the attempt is awaiting its send.
    outcome: a.outcome === "approved" ? "awaiting_approval" : a.outcome,
    verdict: a.verdict,
    rule: a.rule,
    reason: a.reason,
    cost: a.cost,
    durationMs: BigInt(a.finishedAtMs === null ? 0 : Math.max(0, a.finishedAtMs - a.dispatchedAtMs)),
    seq: BigInt(a.seq),
    approvedBy: a.approvedBy,
  };
}

export interface StepExtras {
  history: MessageInitShape<typeof StepAttemptSchema>[];
  parentStepId?: string;
  correlationId?: string;
  depth: number;
  bridges: MessageInitShape<typeof ForeignBridgeSchema>[];
}

/** The ports the extras are read through (`runtime.stores`). */
export interface StepExtrasStores {
  taskReads: Pick<TaskReadStore, "auditSteps" | "stepLinks">;
  bridges: Pick<BridgeViews, "summariesOfTask">;
}

/** The extras of every step of one task. Run inside the tenant's scope (row-level security applies). */
export async function readStepExtras(stores: StepExtrasStores, db: Queryable, orgId: string, taskId: string): Promise<Map<string, StepExtras>> {
  // One after another: the three reads share the transaction's client.
  const audit = await stores.taskReads.auditSteps(db, orgId, taskId);
  const links = await stores.taskReads.stepLinks(db, orgId, taskId);
  const bridges = await stores.bridges.summariesOfTask(db, orgId, taskId);
  const attempts = foldAttempts(audit);
  const extras = new Map<string, StepExtras>();
  for (const link of links) {
    extras.set(link.stepId, {
      history: (attempts.get(link.stepId) ?? []).map(attemptToProto),
      ...(link.delegation?.originStepId ? { parentStepId: link.delegation.originStepId } : {}),
      ...(link.delegation?.correlationId ? { correlationId: link.delegation.correlationId } : {}),
      depth: link.depth,
      bridges: [],
    });
  }
  for (const bridge of bridges) extras.get(bridge.stepId)?.bridges.push(bridgeToProto(bridge));
  return extras;
}

/** A Task proto's steps with their extras filled in. */
export function withStepExtras<T extends { steps?: MessageInitShape<typeof StepSchema>[] }>(task: T, extras: Map<string, StepExtras>): T {
  return { ...task, steps: (task.steps ?? []).map((step) => ({ ...step, ...(extras.get(step.id ?? "") ?? {}) })) };
}

/**
 * Shared pieces of the fan-out tests (issue 14): a side-effect log of an orchestrator's turns (to prove turns ran
 * one at a time, in which order, with which state), gates that hold a delegate until the test lets it answer (so
 * arrival order is chosen, not hoped for), and readers of the audit trail and counters the assertions compare.
 */
import { expect } from "vitest";
import type { Counter } from "prom-client";
import { isDelegation, type Handler } from "../../src/harness/index.js";
import { listAudit } from "../../src/store/audit/postgres-audit-store.js";
import type { AuditRow } from "../../src/domain.js";
import type { Pool } from "pg";
import type { Queryable } from "../../src/store/db.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";

export const ORG = "acme";

/** One turn of a handler as it ran: when, what woke it, and what it handed on. */
export interface TurnRecord {
  stepId: string;
  attempt: number;
  /** performance.now() at entry and exit: one process, one monotonic clock, so overlaps are real overlaps. */
  startedAt: number;
  endedAt: number;
  /** The reply that woke the turn; absent for the first turn of an attempt. */
  reply?: { correlationId: string; status: "ok" | "error"; errorCode?: string; sourceStepId: string };
  outstanding?: string[];
  /** `work.resume.state`: what the previous stand-down left for this turn. */
  stateSeen?: unknown;
  /** The checkpoint state this turn stood down with (delegate / delegateAll / awaitMore), if it did. */
  stateReturned?: unknown;
  /** How the turn ended. */
  outcome: "stood_down" | "returned" | "threw";
}

/** Wraps `handler` so that every turn it runs is appended to `log` once it ends. */
export function recordTurns(log: TurnRecord[], handler: Handler): Handler {
  return async (work, ctx) => {
    const startedAt = performance.now();
    const record: Omit<TurnRecord, "endedAt" | "outcome"> = {
      stepId: work.stepId,
      attempt: work.attempt,
      startedAt,
      ...(work.resume
        ? {
            reply: {
              correlationId: work.resume.reply.correlationId,
              status: work.resume.reply.status,
              ...(work.resume.reply.error ? { errorCode: work.resume.reply.error.code } : {}),
              sourceStepId: work.resume.reply.sourceStepId,
            },
            outstanding: [...work.resume.outstanding],
            stateSeen: structuredClone(work.resume.state),
          }
        : {}),
    };
    try {
      const result = await handler(work, ctx);
      const stoodDown = isDelegation(result);
      log.push({ ...record, endedAt: performance.now(), outcome: stoodDown ? "stood_down" : "returned", ...(stoodDown ? { stateReturned: structuredClone(result.state) } : {}) });
      return result;
    } catch (error) {
      log.push({ ...record, endedAt: performance.now(), outcome: "threw" });
      throw error;
    }
  };
}

/** Fails when any two turns overlap in time: the next one must start after the previous one ended. */
export function expectSerial(turns: readonly TurnRecord[]): void {
  const byStart = [...turns].sort((a, b) => a.startedAt - b.startedAt);
  for (let i = 1; i < byStart.length; i++) {
    expect(byStart[i]!.startedAt, `turn ${i} started before turn ${i - 1} ended`).toBeGreaterThanOrEqual(byStart[i - 1]!.endedAt);
  }
}

/** Turns in the order they started. */
export function inStartOrder(turns: readonly TurnRecord[]): TurnRecord[] {
  return [...turns].sort((a, b) => a.startedAt - b.startedAt);
}

/** Every resumed turn saw exactly the state the turn before it stood down with. */
export function expectStateCarried(turns: readonly TurnRecord[]): void {
  const ordered = inStartOrder(turns);
  for (let i = 1; i < ordered.length; i++) {
    expect(ordered[i]!.stateSeen, `state seen by turn ${i}`).toEqual(ordered[i - 1]!.stateReturned);
  }
}

/** Named latches: a delegate awaits `wait(name)`; the test (or another handler) lets it go with `open(name)`. */
export class Gates {
  private readonly gates = new Map<string, { opened: Promise<void>; open: () => void }>();

  private gate(name: string) {
    let entry = this.gates.get(name);
    if (!entry) {
      let open!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      entry = { opened, open };
      this.gates.set(name, entry);
    }
    return entry;
  }

  wait(name: string): Promise<void> {
    return this.gate(name).opened;
  }

  open(name: string): void {
    this.gate(name).open();
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function submit(db: Pool, yaml: string): Promise<void> {
  await submitWorkflow(db, ORG, parseWorkflowDefinition(yaml));
}

export async function auditOf(db: Queryable, taskId: string): Promise<AuditRow[]> {
  return listAudit(db, ORG, { taskId, limit: 10_000 });
}

/** `action:stepId:verdict` of every row, in seq order. */
export function rowsOf(audit: readonly AuditRow[], action: string): string[] {
  return audit.filter((a) => a.action === action).map((a) => `${a.stepId}:${a.verdict}`);
}

/** The delegate steps' correlation ids, as the coordinator recorded them. */
export async function correlationIdsByStep(db: Queryable, taskId: string): Promise<Map<string, string>> {
  const { rows } = await db.query<{ step_id: string; correlation_id: string }>(
    "SELECT step_id, delegation->>'correlationId' AS correlation_id FROM steps WHERE task_id = $1 AND kind = 'delegation'",
    [taskId],
  );
  return new Map(rows.map((r) => [r.step_id, r.correlation_id]));
}

/** The correlation ids of delegates in the order the coordinator applied their results (their `result` rows' seq). */
export async function resultOrder(db: Queryable, taskId: string, audit: readonly AuditRow[]): Promise<string[]> {
  const ids = await correlationIdsByStep(db, taskId);
  return audit.filter((a) => a.action === "result" && ids.has(a.stepId)).map((a) => ids.get(a.stepId)!);
}

export async function counterTotal(counter: Counter<string>): Promise<number> {
  return (await counter.get()).values.reduce((sum, v) => sum + v.value, 0);
}

/** A task's delegation steps in the order they were asked (`.d1`, `.d2`, …); the task view orders them by update. */
export function delegationSteps<T extends { id: string; kind: string }>(steps: readonly T[]): T[] {
  const asked = (id: string) => Number(id.slice(id.lastIndexOf(".d") + 2));
  return steps.filter((s) => s.kind === "delegation").sort((a, b) => asked(a.id) - asked(b.id));
}

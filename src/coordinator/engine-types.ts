/**
 * What the engine (engine.ts) takes and gives: its inputs (declared with the storage ports that read them,
 * store/engine/engine-store.ts), its result, and the two hooks a coordinator's fenced view adds (the fence, the
 * inline release).
 */
import type { AuditRow } from "../domain.js";
import type { Queryable } from "../store/db.js";
import type { AuditHeadCache } from "../governance/audit-heads.js";
import type { HopSpans } from "../telemetry/hop-spans.js";
import type { ApprovalSpec, HopRecord, TaskRecord } from "../core/model.js";
import type { EngineInput, OutboxRow, RefusedInput } from "../store/engine/engine-store.js";

export type { EngineInput, EngineRefusal } from "../store/engine/engine-store.js";

/** Proves, inside a transaction, that its writer still owns the tenants' shards (shard-ownership.ts); FENCED if not. */
export interface EngineFence {
  fence(db: Queryable, orgIds: Iterable<string>): Promise<void>;
}

/** Which held steps may go now, when a batch freed slots (issue 15; src/fairness/releaser.ts `planRelease`). */
export interface InlineRelease {
  /** `release` events for held steps on these destinations, read in the batch's transaction (after its writes). */
  plan(client: Queryable, destinations: readonly string[]): Promise<EngineInput[]>;
}

export interface ApplyInTransactionOptions {
  /** Audit-chain heads kept in memory (see `Engine.apply`). */
  heads?: AuditHeadCache;
  /** The hop spans, ended by the caller once it knows whether the transaction committed (`apply`). */
  spans?: HopSpans;
}

export interface ApplyResult {
  outbox: OutboxRow[];
  hops: HopRecord[];
  audit: AuditRow[];
  approvals: ApprovalSpec[];
  tasks: TaskRecord[];
  applied: number;
  duplicates: number;
  ignored: Array<{ taskId: string; type: string; reason: string }>;
  /**
   * Inputs refused: an unknown task, another tenant's task, or a sender that is not the step's destination. They
   * changed nothing and are not recorded as processed (a genuine envelope with the same id still applies later);
   * the coordinator dead-letters their entries.
   */
  refused: RefusedInput[];
  /** Ids of reply rows this batch made `pending` (new, or approved): the sender's work once committed. */
  replies: string[];
}

export function emptyResult(): ApplyResult {
  return { outbox: [], hops: [], audit: [], approvals: [], tasks: [], applied: 0, duplicates: 0, ignored: [], refused: [], replies: [] };
}

/** Adds a phase's result to the batch's (audit rows are appended for the whole batch, later). */
export function mergeResult(into: ApplyResult, from: ApplyResult): void {
  into.outbox.push(...from.outbox);
  into.hops.push(...from.hops);
  into.approvals.push(...from.approvals);
  into.tasks.push(...from.tasks);
  into.ignored.push(...from.ignored);
  into.refused.push(...from.refused);
  into.replies.push(...from.replies);
  into.applied += from.applied;
  into.duplicates += from.duplicates;
}

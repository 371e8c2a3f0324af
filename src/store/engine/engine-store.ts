/**
 * The engine's storage ports (issue 27 §2): what one batch reads and writes inside its transaction, one small
 * interface per concern. The engine holds a transaction it never looks into and hands it back to these; it
 * imports no SQL. The Postgres adapter of each sits beside this port in store/engine/ (postgres-engine-store.ts
 * wires them), and runtime.ts hands them in.
 *
 * Everything here runs inside the caller's transaction: an adapter never opens a connection of its own (a second
 * pooled connection per transaction can exhaust the pool) and never commits.
 */
import type { AuditEntry, AuditRow, TenantFacts } from "../../domain.js";
import type { AdmissionFacts, AdmissionGate } from "../../core/admission.js";
import type { LimitTable } from "../../core/limits.js";
import type { ApprovalSpec, CoordinatorEvent, Effect, HopRecord, StepRecord, TaskRecord, TaskState } from "../../core/model.js";
import type { ReplyAddress } from "../../core/reply-address.js";
import type { ParkedReplyFacts, ReplyRequestFacts } from "../../core/reply-types.js";
import type { AuditHeadCache } from "../../governance/audit-heads.js";
import type { Pool, PoolClient, Queryable } from "../db.js";
import type { TraceRootStore } from "../telemetry/trace-root-store.js";

/** One event for one task of a tenant, as the engine applies it (coordinator/engine.ts). */
export interface EngineInput {
  orgId: string;
  taskId: string;
  event: CoordinatorEvent;
  /** Record the event id in processed_envelopes and skip it if it is there already. */
  dedupe?: boolean;
  /** When the triggering envelope was created (ms), for the hop latency metric. */
  createdAtMs?: number;
  /** The W3C traceparent the triggering envelope carried: the hop's span is its child (tracing on only). */
  traceparent?: string | undefined;
}

/** Metric label of a refused inbound event (`switchyard_inbox_refused_total{reason}`). */
export type EngineRefusal = "unknown_task" | "tenant_mismatch" | "wrong_sender";

/** An input the engine refused: it changed nothing. */
export interface RefusedInput {
  input: EngineInput;
  label: EngineRefusal;
  reason: string;
}

/**
 * An envelope written to the transactional outbox in the transaction of the decision that produced it, published
 * after commit (coordinator/outbox-publisher.ts) or by the relay sweep if its writer crashed.
 */
export interface OutboxRow {
  id: number;
  stream: string;
  bytes: Uint8Array;
  createdAtMs: number;
}

/** How a batch gets its transaction, and what the store says about a failure. */
export interface EngineTransactions {
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(pool: Pool, fn: (tx: PoolClient) => Promise<T>): Promise<T>;
  /** Runs `attempt` again while it fails with a conflict a retry resolves (deadlock, serialization failure). */
  retryOnConflict<T>(attempt: () => Promise<T>): Promise<T>;
  /** Runs `fn` under a savepoint of `tx`: released when it resolves; rolled back to and rethrown when it throws. */
  savepoint<T>(tx: PoolClient, fn: () => Promise<T>): Promise<T>;
  /** The store cannot be reached: nothing more can happen in this transaction. */
  isUnavailable(error: unknown): boolean;
}

/** Exactly-once application of inbound envelopes. */
export interface ProcessedEnvelopeStore {
  /** The inputs not applied before; those with `dedupe` are recorded as processed in `tx`. */
  fresh(tx: Queryable, inputs: readonly EngineInput[]): Promise<EngineInput[]>;
  /** A refused envelope was not processed: its id must not shadow the genuine envelope that may carry it. */
  forgetRefused(tx: Queryable, refused: readonly RefusedInput[], applied: ReadonlySet<string>): Promise<void>;
}

/** What Postgres holds about a tenant for one UTC day. */
export interface StoredTenantFacts {
  /** The UTC day `dailyCost` is for (`costDay`). */
  day: string;
  dailyCost: number;
  dailyBudget: number | null;
  idempotentForeignAgents: readonly string[];
}

/** A batch's tasks, locked until its transaction ends. */
export interface LockedTasks {
  tasks: Map<string, TaskRecord>;
  steps: Map<string, StepRecord[]>;
  /** The stored facts of the tenants asked for, read after the locks were taken (empty when no task was found). */
  tenantFacts: Map<string, StoredTenantFacts>;
}

/** What a phase adds to the batch's result. */
export interface PersistedPhase {
  outbox: OutboxRow[];
  hops: HopRecord[];
  approvals: ApprovalSpec[];
  tasks: TaskRecord[];
  /** Ids of reply rows made `pending`. */
  replies: string[];
  /** To append, after every phase (the audit append takes the last lock). */
  audit: AuditEntry[];
  /** Destinations on which a step stopped being `dispatched`: a slot there may have freed. */
  freed: Set<string>;
  /** Tenants of which a step with a concurrency key stopped being `dispatched`: the key may have room now. */
  freedKeyed: Set<string>;
}

/** Tasks and their steps, and everything a decided phase writes with them (outbox, approvals, held steps, replies). */
export interface TaskStateStore {
  /**
   * Locks the tasks in id order and reads them with their steps, and the stored facts of `tenants` for the UTC day
   * of `nowMs`. `skipLocked`: a caller already holding other tasks' locks takes only those free now.
   */
  lockForUpdate(tx: Queryable, taskIds: readonly string[], tenants: { orgIds: readonly string[]; nowMs: number }, options: { skipLocked: boolean }): Promise<LockedTasks>;
  /** Writes what the phase's decisions changed, from `before` to `after`, and the effects they emitted. */
  persist(tx: PoolClient, before: ReadonlyMap<string, TaskState>, after: ReadonlyMap<string, TaskState>, effects: readonly Effect[], gate: AdmissionGate | undefined): Promise<PersistedPhase>;
}

/** The load on the destinations, tenants and concurrency keys a batch may dispatch to (issue 15). */
export interface AdmissionStore {
  /** Undefined when nothing limits the batch (no limits in force, no concurrency key): then nothing is read. */
  load(tx: Queryable, limits: LimitTable, states: ReadonlyMap<string, TaskState>, inputs: readonly EngineInput[]): Promise<AdmissionFacts | undefined>;
}

/** Per-tenant facts every hop of a batch sees. */
export interface TenantFactsSource {
  /** `stored`: this tenant's facts as the batch already read them; used when they are for `nowMs`'s day. */
  get(orgId: string, db: Queryable, nowMs: number, stored?: StoredTenantFacts): Promise<TenantFacts>;
}

/** Each tenant's running daily cost. */
export interface TenantCostStore {
  /** Adds each tenant's delta to its cost of the UTC day of `nowMs`. */
  accrue(tx: Queryable, deltas: ReadonlyMap<string, number>, nowMs: number): Promise<void>;
}

/** The hash-chained audit log. */
export interface AuditLogStore {
  /**
   * Appends `entries` (any mix of tenants; order kept per tenant) and returns the chained rows in input order.
   * With `heads`, a tenant's head found there is not locked and read first (STALE_HEAD if it moved).
   */
  append(tx: PoolClient, entries: readonly AuditEntry[], options: { heads?: AuditHeadCache | undefined }): Promise<AuditRow[]>;
}

export interface ReplyRequestQuery {
  orgId: string;
  taskId: string;
  address: ReplyAddress | null;
  idempotencyKey: string;
  text: string;
  actor: string;
}

/** What an origin reply's decision reads under the task's lock. */
export interface ReplyFactsSource {
  forRequest(db: Queryable, query: ReplyRequestQuery): Promise<ReplyRequestFacts>;
  /** The reply parked on `approvalId`, or undefined when the approval holds no reply. */
  forApproval(db: Queryable, orgId: string, approvalId: string): Promise<ParkedReplyFacts | undefined>;
}

/** Every storage port the engine takes. */
export interface EngineStore {
  transactions: EngineTransactions;
  envelopes: ProcessedEnvelopeStore;
  tasks: TaskStateStore;
  admission: AdmissionStore;
  tenantFacts: TenantFactsSource;
  costs: TenantCostStore;
  audit: AuditLogStore;
  replyFacts: ReplyFactsSource;
  /** The tasks' root trace contexts, read only when tracing is on. */
  traceRoots: TraceRootStore;
}

/**
 * The coordinator process's storage ports (issue 27 §2), beside the engine's (store/engine/engine-store.ts): what
 * its sweeps read (due and stranded steps, the outage probe, the trim of applied envelope ids), what its inbox
 * intake checks envelopes' tenancy claims against, the outbox relay, and shard leases (store/shards/). The
 * Postgres adapters sit beside this file (postgres-coordinator-store.ts wires them); runtime.ts hands them out as
 * `runtime.stores.coordinator`. Every method takes the connection or transaction it runs on first.
 */
import type { TenantSelection } from "../../flags/flag-types.js";
import type { Pool, PoolClient, Queryable } from "../db.js";
import type { OutboxRow } from "../engine/engine-store.js";
import type { ShardFilter, ShardStore } from "../shards/shard-store.js";

/** A dispatched, retrying or waiting attempt whose due time (timeout, end of backoff) has come. */
export interface DueStep {
  orgId: string;
  taskId: string;
  stepId: string;
  attempt: number;
  dueAtMs: number;
}

/** An open task with workflow steps still `pending` although every step they need has completed. */
export interface StrandedTask {
  orgId: string;
  taskId: string;
  stepIds: string[];
}

export interface DueStepQuery {
  nowMs: number;
  tenants?: TenantSelection | undefined;
  shards?: ShardFilter | undefined;
  limit: number;
}

export interface StrandedStepQuery {
  tenants?: TenantSelection | undefined;
  shards?: ShardFilter | undefined;
  /** A step and each of its needs must have been last written over this long ago. */
  quietMs: number;
  limit: number;
  /** How long a step without needs (its start event may wait in a busy inbox) must have been quiet. */
  firstStepQuietMs: number;
}

/** What the coordinator's sweeps read and trim. */
export interface SweepStore {
  /** The due steps of these tenants and shards (none when the selection matches nothing), earliest first. */
  dueSteps(db: Queryable, query: DueStepQuery): Promise<DueStep[]>;
  /** Open tasks with at least one stranded step, oldest first (none when the selection matches nothing). */
  strandedTasks(db: Queryable, query: StrandedStepQuery): Promise<StrandedTask[]>;
  /** One round trip: throws while the store cannot be reached. */
  probe(db: Queryable): Promise<void>;
  /** Deletes the applied envelope ids older than `retentionMs`; resolves with how many went. */
  trimProcessedEnvelopes(db: Queryable, retentionMs: number): Promise<number>;
}

/** Who owns a task, for the inbox's check of an envelope's tenancy claim (tasks never move between tenants). */
export interface TaskOwnerStore {
  /** Task id (lower case) → its tenant, for the tasks that exist among `taskIds` (valid UUIDs). */
  owners(db: Queryable, taskIds: readonly string[]): Promise<Map<string, string>>;
}

/** The transactional outbox as its publisher sees it: rows to delete once published, stale rows to relay. */
export interface OutboxStore {
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(pool: Pool, fn: (tx: PoolClient) => Promise<T>): Promise<T>;
  /** Claims up to `limit` rows older than `olderThanMs` that nobody else is publishing now (locked until `tx` ends). */
  claimStale(tx: Queryable, olderThanMs: number, limit: number): Promise<OutboxRow[]>;
  delete(db: Queryable, ids: readonly number[]): Promise<void>;
}

/** Every storage port a coordinator takes besides its engine's. */
export interface CoordinatorStore {
  shards: ShardStore;
  sweeps: SweepStore;
  taskOwners: TaskOwnerStore;
  outbox: OutboxStore;
}

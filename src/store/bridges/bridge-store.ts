/**
 * The bridges port (issue 27 §2): rows of `a2a_bridge` (migrations/0003), the correlation between a governed foreign
 * hop (tenant, task, step, attempt) and the task it opened at the agent. The dispatcher, sender, poller, sweep,
 * callback intake, resume and call heartbeat take it in their options; the Postgres adapter is
 * postgres-bridge-store.ts. Callers run as the owner (coordinator, callback route): the bridge id alone names the tenant.
 * The gateway's status views (`BridgeViews`) are the exception: they read in the tenant's scope, by tenant.
 *
 * Every method takes the Queryable it runs on first: the caller's transaction, or the pool for a statement of its own.
 */
import type { DeadLetterView } from "../../bus/dead-letters.js";
import type { BridgeStatus } from "../../core/bridge-status.js";
import type { OutboxRow } from "../engine/engine-store.js";
import type { ForeignArtifact } from "../../foreign/a2a/artifacts.js";
import type { ForeignUsage } from "../../foreign/bridge-transition.js";
import type { OutboxEnvelope } from "../../foreign/foreign-result.js";
import type { HopRates, PricedBy } from "../../foreign/pricing.js";
import type { ClaimRooms } from "../../foreign/send-slots.js";
import type { Queryable } from "../db.js";

export type { BridgeStatus } from "../../core/bridge-status.js";

export interface BridgeRecord {
  id: string;
  orgId: string;
  taskId: string;
  stepId: string;
  attempt: number;
  agentKey: string;
  dialect: "auto" | "1.0" | "0.3" | "mcp";
  foreignTaskId: string | null;
  status: BridgeStatus;
  notificationTokenHash: string;
  tokenKid: string;
  request: unknown;
  clearance: number;
  artifacts: ForeignArtifact[];
  lastState: string | null;
  deadlineMs: number | null;
  /** How the result comes back once sent (null until then). */
  delivery: "push" | "poll" | "call" | null;
  /** When the poller asks the agent next (a polled bridge, or a pushed one whose end must be confirmed). */
  nextPollAt: Date | null;
  /** GetTask calls the poller made for this bridge. */
  polls: number;
  /** Artifacts pushed after the bridge resolved, kept apart from the RESULT already written (bridge-transition.ts). */
  lateArtifacts: ForeignArtifact[];
  createdAt: Date;
  updatedAt: Date;
  resolvedAt: Date | null;
  /** When the send started (the sender writes it); a metered hop's elapsed time runs from here. */
  sentAt: Date | null;
  /** sha256 hex of the canonical JSON of `request`, exactly what may leave (send-fields.ts). */
  sentHash: string | null;
  /** The latest usage the agent reported (pricing.ts); null when none. */
  usage: ForeignUsage | null;
  /** How the resolved hop was priced; null while open, or when nothing was charged (a failed send). */
  pricedBy: PricedBy | null;
  /** W3C traceparent of the hop that dispatched it (tracing on; src/telemetry/foreign-spans.ts). */
  traceparent?: string | null;
}

export interface NewBridge {
  id: string;
  orgId: string;
  taskId: string;
  stepId: string;
  attempt: number;
  agentKey: string;
  dialect: BridgeRecord["dialect"];
  notificationTokenHash: string;
  tokenKid: string;
  request: unknown;
  /** sha256 hex of the canonical JSON of `request` (send-fields.ts). */
  sentHash: string;
  clearance: number;
  /** The dispatching hop's traceparent, when tracing is on. */
  traceparent?: string | undefined;
}

/** A bridge's new state to write, with the outbox rows (RESULTs) that go with it. */
export interface BridgeWrite {
  bridge: BridgeRecord;
  /** The row version (`xmin`) the new state was computed from; null when the caller holds the row lock. */
  version: string | null;
  results: readonly OutboxEnvelope[];
  /**
   * Make a GetTask due now (`next_poll_at = now()`, poll count reset): the bridge heard its task ended without the
   * artifacts being known for sure, and the poller resolves it from the whole task (bridge-transition.ts).
   */
  pollNow?: boolean;
}

export interface BridgeWriteResult {
  /** Ids of the bridges written. */
  written: Set<string>;
  /** The outbox rows inserted with them. */
  outbox: OutboxRow[];
}

/** A bridge locked for a resume, with its agent's pricing rates (0 when the agent was deleted meanwhile). */
export interface LockedBridge {
  bridge: BridgeRecord;
  rates: HopRates;
}

export interface CallbackTarget {
  bridge: BridgeRecord;
  /** The tenant's link key the bridge's tokens are signed with; undefined when the tenant no longer has it. */
  key: { kid: string; secret: Buffer; retiredAt: string | null } | undefined;
  /** The agent's pricing rates (0 when the agent was deleted meanwhile). */
  rates: HopRates;
  /** The row version `find` read (`xmin`): the optimistic write applies only to that version. */
  version: string;
}

/** The coordinator's tenant filter (flags/flag-types.ts `tenantSqlFilter`): only these, or all but these. */
export interface BridgeTenants {
  only: readonly string[] | null;
  except: readonly string[] | null;
}

export interface ClaimedBridge {
  bridge: BridgeRecord;
  stepStatus: string | null;
  stepAttempt: number | null;
  dueAtMs: number | null;
  /** The step's own timeout from its workflow definition (null: the coordinator's default applies). */
  stepTimeoutMs: number | null;
}

export interface ClaimRequest {
  rooms: ClaimRooms;
  leaseMs: number;
  tenants: BridgeTenants;
}

/** What a successful send records (sender.ts `recordSent`). */
export interface SentBridge {
  foreignTaskId: string;
  dialect: string;
  deadlineMs: number;
  /** The state the send's answer named, if any. */
  state: string | null;
  delivery: string;
  /** When polled: the first GetTask is due this long after now (ms). */
  firstPollMs: number | null;
}

/** A bridge the sweep closed because its step attempt moved on, and whether that was a cancellation. */
export interface MovedOnBridge {
  bridge: BridgeRecord;
  cancelled: boolean;
}

/** Rows, reads and the one statement that writes a bridge with its RESULTs. */
export interface BridgeRows {
  /** Idempotent by id (the hop's envelope id): a replayed hop finds its bridge. */
  insert(db: Queryable, bridge: NewBridge): Promise<void>;
  /** `id` must be a bridge id (core/bridge-status.ts `isBridgeId`). */
  find(db: Queryable, id: string, forUpdate?: boolean): Promise<BridgeRecord | undefined>;
  /** The bridges of a task, oldest first (for tests, the CLI and operators). */
  list(db: Queryable, orgId: string, taskId: string): Promise<BridgeRecord[]>;
  /**
   * Writes bridges and their RESULTs' outbox rows in ONE statement, so a bridge and its RESULT are written together
   * or not at all. A bridge with a `version` is written only if its row is still that version.
   */
  write(db: Queryable, writes: readonly BridgeWrite[]): Promise<BridgeWriteResult>;
  /** Locks the bridges (`ids` sorted: two batches on overlapping bridges queue instead of deadlocking), with each agent's rates. */
  lockWithRates(tx: Queryable, ids: readonly string[]): Promise<LockedBridge[]>;
  /** The agent named its task but our send failed: opens the bridge to the poller (due now). */
  handToPoller(tx: Queryable, id: string): Promise<void>;
  /** The callback route's lookup: each bridge with its row version, link key and agent rates (unknown ids left out). */
  callbackTargets(db: Queryable, ids: readonly string[]): Promise<CallbackTarget[]>;
  /** Failed steps whose foreign hop was not re-sent (FOREIGN_NOT_RETRIED), oldest first; `agentKey` narrows to one agent. */
  listNotRetried(db: Queryable, options: { agentKey: string | null; limit: number }): Promise<DeadLetterView[]>;
}

/** The sender's claims and what it records of a send (send-slots.ts, sender.ts). */
export interface BridgeSends {
  /** Claims `pending_send` bridges within the rooms, with a lease (`claimed_until`). */
  claimForSend(db: Queryable, request: ClaimRequest): Promise<ClaimedBridge[]>;
  /** Of `bridgeIds`, those whose call should stop: resolved or gone, or their step attempt is no longer in flight. */
  attemptsOver(db: Queryable, bridgeIds: readonly string[]): Promise<string[]>;
  /** Closes a bridge the agent never named a task for (`timed_out`); `not_sent` only when nothing may have left. */
  closeUnsent(db: Queryable, bridgeId: string, mayHaveReached: boolean): Promise<void>;
  /** Hands a claimed, unsent bridge back (its lease cleared) to wait. */
  releaseClaim(db: Queryable, bridgeId: string): Promise<void>;
  /** Records a successful send; answers the bridge's foreign task id afterwards (a racing push's may differ). */
  recordSent(db: Queryable, bridgeId: string, sent: SentBridge): Promise<string | null | undefined>;
  /** Moves a bridge out of `pending_send` before a call that is the work; false when it was no longer waiting. */
  markStarted(db: Queryable, bridgeId: string, foreignTaskId: string, deadlineMs: number): Promise<boolean>;
  /**
   * A call's heartbeat: while the bridge is open and its step attempt in flight, moves `deadline_ms` on and writes
   * the envelope to the outbox in one statement; answers the outbox row id, undefined when the attempt is over.
   */
  heartbeat(db: Queryable, bridgeId: string, envelope: OutboxEnvelope, deadlineMs: number): Promise<number | undefined>;
}

/** The sweep's and the poller's claims. */
export interface BridgePolls {
  /** Locks open bridges whose step attempt is no longer in flight (SKIP LOCKED), in the caller's transaction. */
  lockMovedOn(tx: Queryable, limit: number, tenants: BridgeTenants): Promise<MovedOnBridge[]>;
  markTimedOut(tx: Queryable, ids: readonly string[]): Promise<void>;
  /** Open pushed bridges with no news for `quietMs`, claimed by touching `updated_at`. */
  claimQuiet(db: Queryable, options: { limit: number; quietMs: number; tenants: BridgeTenants }): Promise<BridgeRecord[]>;
  /** Bridges with a GetTask due, at most `perAgent` per (tenant, agent), leased for `leaseMs` and counted in `polls`. */
  claimDuePolls(db: Queryable, options: { limit: number; leaseMs: number; perAgent: number; tenants: BridgeTenants }): Promise<BridgeRecord[]>;
  /** Takes back a claim's count of a poll that was never made. */
  uncountPoll(db: Queryable, bridgeId: string): Promise<void>;
  /** The next poll after `backoffMs`, never past the attempt's deadline, unless resolved or re-scheduled meanwhile. */
  reschedulePoll(db: Queryable, bridgeId: string, backoffMs: number): Promise<void>;
}

/**
 * A bridge as the API's status views show it (a task's page, an agent's status): never the request sent, the
 * artifacts or the notification token hash.
 */
export interface BridgeSummary {
  id: string;
  agentKey: string;
  taskId: string;
  stepId: string;
  attempt: number;
  status: string;
  lastState: string | null;
  dialect: string;
  delivery: string | null;
  foreignTaskId: string | null;
  polls: number;
  createdAt: Date;
  sentAt: Date | null;
  updatedAt: Date;
  resolvedAt: Date | null;
}

/** The gateway's reads of bridges (task detail, ForeignAgentService.Status), in the tenant's scope. */
export interface BridgeViews {
  /** The task's bridges, oldest first. */
  summariesOfTask(db: Queryable, orgId: string, taskId: string): Promise<BridgeSummary[]>;
  /** The agent's newest `limit` bridges. */
  recentOfAgent(db: Queryable, orgId: string, agentKey: string, limit: number): Promise<BridgeSummary[]>;
  /** How many of the agent's bridges are still open (pending send, dispatched or working). */
  openOfAgent(db: Queryable, orgId: string, agentKey: string): Promise<number>;
}

export interface BridgeStore extends BridgeRows, BridgeSends, BridgePolls, BridgeViews {}

/**
 * The port of stall diagnosis: what `explainStall` reads about a task that does not move. One adapter reads
 * Postgres and Redis directly (stall-facts-local.ts, the CLI without `--url`); a gateway could serve the same
 * facts over the API for remote watchers.
 */

/** A queue's consumer group as Redis reports it (XINFO GROUPS / CONSUMERS). */
export interface QueueReading {
  /** False when no harness ever created its group on the stream: none has ever read it. */
  groupExists: boolean;
  /** Consumers ever registered in the group (dead ones stay until removed). */
  consumers: number;
  /** Milliseconds since the most recently active consumer last read or acknowledged; null without consumers. */
  idleMs: number | null;
  /** Entries delivered and not acknowledged. */
  pending: number;
  /** Entries not yet delivered to the group (Redis 7+ reports it; null when unknown). */
  undelivered: number | null;
}

/** A flag that keeps work from moving, with where its value comes from. */
export interface FlagFact {
  /** e.g. `HARNESS_ENABLED is off for role:echo`. */
  text: string;
  /** The flags table (set with `switchyard flags set`), or this shell's environment default. */
  source: "table" | "env";
}

export interface StallFlags {
  /** BUS_ENABLED off (outbox rows wait in Postgres), or undefined. */
  busOff(): FlagFact | undefined;
  /** COORDINATOR_ENABLED off for the tenant (globally or for it), or undefined. */
  tenantHeld(orgId: string): FlagFact | undefined;
  /** HARNESS_ENABLED off for the queue (globally or for it), or undefined. */
  harnessOff(kind: "role" | "team", name: string): FlagFact | undefined;
}

export interface ApprovalFact {
  id: string;
  rule: string;
  reason: string;
  createdAt: Date;
}

export interface BridgeFact {
  id: string;
  agentKey: string;
  /** a2a_bridge.status: pending_send, dispatched, working, … */
  status: string;
  updatedAt: Date | null;
}

export interface StallFacts {
  flags(): Promise<StallFlags>;
  queue(stream: string): Promise<QueueReading>;
  approval(orgId: string, approvalId: string): Promise<ApprovalFact | undefined>;
  /** The newest bridge of a FOREIGN step (its latest attempt). */
  bridge(orgId: string, taskId: string, stepId: string): Promise<BridgeFact | undefined>;
}

/**
 * The port through which a coordinator lets held steps go (issue 15): handed in, so the coordinator knows no
 * fairness arithmetic or SQL. The adapter is src/fairness/releaser.ts (`heldStepReleases`): a plan read inside the
 * batch that freed a slot, and rounds beside the inbox for what no batch of this coordinator sees.
 */
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Pool } from "../store/db.js";
import type { Engine, InlineRelease } from "./engine.js";
import type { OutboxRow } from "../store/engine/engine-store.js";

export interface ReleaseContext {
  /** Whether this coordinator releases the tenant's steps now (owns its shard, its coordinator flag is on). */
  serves: (orgId: string) => boolean;
  clock: () => number;
  metrics?: Metrics;
}

export interface ReleaseLoopContext extends ReleaseContext {
  /** The coordinator's engine, fenced by its shard leases. */
  engine: Engine;
  pool: Pool;
  logger: Logger;
  /** Publishes what a round released (the coordinator's outbox publisher). */
  publish: (rows: OutboxRow[]) => Promise<void>;
}

export interface HeldReleases {
  /** The engine's inline release, built before the fenced engine it becomes part of. */
  inline(context: ReleaseContext): InlineRelease;
  /** The rounds, run beside the inbox until the signal. */
  loop(context: ReleaseLoopContext): { run(signal: AbortSignal): Promise<void> };
}

/**
 * Publishes committed outbox rows to the bus and deletes them. `publish` is the fast path right after a commit;
 * `sweep` is the relay for rows a crashed writer left behind (older than `staleMs`).
 */
import type { Bus } from "../bus/bus.js";
import type { DependencyHealth } from "../process/dependency-health.js";
import type { Pool } from "../store/db.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import type { OutboxRow } from "../store/engine/engine-store.js";
import type { OutboxStore } from "../store/coordinator/coordinator-store.js";

export interface OutboxPublisherOptions {
  pool: Pool;
  /** The outbox rows (`runtime.stores.coordinator.outbox`; Postgres: store/engine/postgres-outbox-store.ts). */
  store: OutboxStore;
  bus: Bus;
  staleMs: number;
  batch?: number;
  logger?: Logger;
  metrics?: Metrics;
  /** A publish that fails because Redis or Postgres is down is recorded here instead of logged each time. */
  health?: DependencyHealth;
}

export class OutboxPublisher {
  private readonly logger: Logger;

  constructor(private readonly options: OutboxPublisherOptions) {
    this.logger = options.logger ?? silentLogger;
  }

  /** Publishes rows just committed by this process. A failure leaves them for the sweep: nothing is lost. */
  async publish(rows: readonly OutboxRow[]): Promise<void> {
    if (rows.length === 0) return;
    try {
      await this.options.bus.publishEncoded(rows.map((r) => ({ stream: r.stream, data: r.bytes })));
      this.observe(rows);
      await this.options.store.delete(this.options.pool, rows.map((r) => r.id));
    } catch (error) {
      if (this.options.health?.absorb(error)) this.logger.debug({ err: error, rows: rows.length }, "outbox publish failed in an outage; the relay sweep will retry");
      else this.logger.warn({ err: error, rows: rows.length }, "outbox publish failed; the relay sweep will retry");
    }
  }

  /** Publishes stale rows; returns how many. Safe to run in several processes at once (SKIP LOCKED). */
  async sweep(): Promise<number> {
    const { store } = this.options;
    return store.transaction(this.options.pool, async (client) => {
      const rows = await store.claimStale(client, this.options.staleMs, this.options.batch ?? 500);
      if (rows.length === 0) return 0;
      await this.options.bus.publishEncoded(rows.map((r) => ({ stream: r.stream, data: r.bytes })));
      this.observe(rows);
      await store.delete(client, rows.map((r) => r.id));
      return rows.length;
    });
  }

  private observe(rows: readonly OutboxRow[]): void {
    const now = Date.now();
    for (const row of rows) this.options.metrics?.outboxLag.observe(Math.max(0, now - row.createdAtMs) / 1000);
  }
}

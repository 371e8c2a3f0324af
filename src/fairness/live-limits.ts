/**
 * The dispatch limits a running process obeys: table `dispatch_limits`, re-read every `pollMs` (default 1 s, the
 * flags' poll) so a change made with `switchyard limits set` is in force everywhere within about a second. Reads are
 * synchronous (a snapshot swapped whole on each poll); a failed poll keeps the last good snapshot.
 */
import type { DependencyHealth } from "../process/dependency-health.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Queryable } from "../store/db.js";
import { TablePoller } from "../process/table-poller.js";
import type { LimitStore } from "../store/limits/limit-store.js";
import { LimitTable, type LimitSource } from "../core/limits.js";

export interface LiveLimitsOptions {
  db: Queryable;
  /** How table `dispatch_limits` is read (`runtime.stores.limits`). */
  store: Pick<LimitStore, "list">;
  /** @defaultValue 1000 */
  pollMs?: number;
  logger?: Logger;
  health?: DependencyHealth;
}

export class LiveLimits implements LimitSource {
  private table = new LimitTable();
  private readonly logger: Logger;
  private readonly poller: TablePoller;
  private signature = "";

  constructor(private readonly options: LiveLimitsOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "limits" });
    this.poller = new TablePoller({
      what: "limits",
      refresh: () => this.refresh(),
      pollMs: options.pollMs ?? 1000,
      logger: this.logger,
      ...(options.health ? { health: options.health } : {}),
    });
  }

  limits(): LimitTable {
    return this.table;
  }

  /** Reads the table now; throws when the read fails. */
  async refresh(): Promise<void> {
    const rows = await this.options.store.list(this.options.db);
    const signature = JSON.stringify(rows.map((r) => [r.orgId, r.destination, r.maxInFlight, r.ratePerSec, r.burst, r.weight]));
    if (signature === this.signature) return;
    this.signature = signature;
    this.table = new LimitTable(rows);
    this.logger.info({ limits: rows.map((r) => ({ tenant: r.orgId, destination: r.destination, maxInFlight: r.maxInFlight, ratePerSec: r.ratePerSec, weight: r.weight })) }, "dispatch limits read");
  }

  /** Re-reads the table every `pollMs` until `stop()` or the signal. Idempotent. */
  start(signal?: AbortSignal): void {
    this.poller.start(signal);
  }

  stop(): Promise<void> {
    return this.poller.stop();
  }
}

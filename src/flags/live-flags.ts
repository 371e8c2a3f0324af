/**
 * The flags a running process obeys: environment defaults with table `flags` on top, re-read every `pollMs`
 * (default 1 s), so a change made with `switchyard flags set` (or the admin API) is in force in every process
 * within about a second, without a restart. Reads are synchronous and cheap (an in-memory snapshot swapped
 * whole on each poll); a failed poll keeps the last good snapshot and says so in the log.
 *
 * This object is the `EgressSwitch` the engine's tenant facts read, the `CoordinatorFlags` of a coordinator and
 * the `HarnessFlags` of a harness.
 */
import type { FlagsConfig } from "../config/index.js";
import type { DependencyHealth } from "../process/dependency-health.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Queryable } from "../store/db.js";
import { TablePoller } from "../process/table-poller.js";
import { describeScope, listFlags } from "./flag-store.js";
import type { FlagName, FlagRow, FlagSwitches, ScopeKind, TenantSelection } from "./flag-types.js";
import { FlagValues, type FlagView } from "./flag-values.js";

export interface LiveFlagsOptions {
  /** Where table `flags` lives. */
  db: Queryable;
  /** The environment's defaults (`config.flags`). */
  defaults: FlagsConfig;
  /** @defaultValue defaults.pollMs */
  pollMs?: number;
  /** @defaultValue a silent logger */
  logger?: Logger;
  /** A poll that fails because Postgres is down is recorded here (which logs the outage) instead of logged itself. */
  health?: DependencyHealth;
}

export class LiveFlags implements FlagSwitches {
  private values: FlagValues;
  private readonly logger: Logger;
  private readonly listeners = new Set<() => void>();
  private readonly readListeners = new Set<(rows: readonly FlagRow[]) => void>();
  private readonly poller: TablePoller;
  private everLoaded = false;

  constructor(private readonly options: LiveFlagsOptions) {
    this.values = new FlagValues(options.defaults, []);
    this.logger = (options.logger ?? silentLogger).child({ component: "flags" });
    this.poller = new TablePoller({
      what: "flags",
      refresh: () => this.refresh(),
      pollMs: options.pollMs ?? options.defaults.pollMs,
      logger: this.logger,
      ...(options.health ? { health: options.health } : {}),
    });
  }

  /** True once the table has been read at least once (before that, the environment's defaults apply). */
  get loaded(): boolean {
    return this.everLoaded;
  }

  /** Reads the table now and swaps the snapshot; listeners hear about changes. Throws when the read fails. */
  async refresh(): Promise<void> {
    const rows = await listFlags(this.options.db);
    const previous = this.values;
    const first = !this.everLoaded;
    this.values = new FlagValues(this.options.defaults, rows);
    this.everLoaded = true;
    const changes = diff(previous.rows, rows);
    if (first) this.logger.info({ stored: changes }, "flags read");
    for (const listener of this.readListeners) {
      try {
        listener(rows);
      } catch (error) {
        this.logger.warn({ err: error }, "a flag read listener failed");
      }
    }
    if (changes.length === 0) return;
    if (!first) this.logger.info({ changes }, "flags changed");
    for (const listener of this.listeners) {
      try {
        listener();
      } catch (error) {
        this.logger.warn({ err: error }, "a flag change listener failed");
      }
    }
  }

  /** Starts re-reading the table every `pollMs` until `stop()` or the signal. Idempotent. */
  start(signal?: AbortSignal): void {
    this.poller.start(signal);
  }

  /** Stops the poller; resolves once it has. */
  stop(): Promise<void> {
    return this.poller.stop();
  }

  /** Called after each poll that changed a value. Returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Called after every successful read of the table, changed or not, with the rows read (e.g. the coordinator's
   * flag mirror, which re-writes them each time so a lost write heals at the next poll). Not called for a failed
   * read. The listener must not block: it runs inside the poll. Returns the unsubscribe function.
   */
  onRead(listener: (rows: readonly FlagRow[]) => void): () => void {
    this.readListeners.add(listener);
    return () => this.readListeners.delete(listener);
  }

  /** The stored rows of the current snapshot. */
  rows(): readonly FlagRow[] {
    return this.values.rows;
  }

  /** Every flag value in force, environment defaults included (for listings and metrics). */
  describe(): FlagView[] {
    return this.values.describe();
  }

  /** One scope's own value (its stored row, else the environment default), without the global master switch. */
  value(name: FlagName, scopeKind: ScopeKind, scope = ""): boolean {
    return this.values.value(name, scopeKind, scope);
  }

  busEnabled(): boolean {
    return this.values.busEnabled();
  }

  coordinatorEnabled(orgId: string): boolean {
    return this.values.coordinatorEnabled(orgId);
  }

  coordinatorTenants(): TenantSelection {
    return this.values.coordinatorTenants();
  }

  harnessEnabled(kind: "role" | "team", name: string): boolean {
    return this.values.harnessEnabled(kind, name);
  }

  busRouted(kind: "role" | "team", name: string): boolean {
    return this.values.busRouted(kind, name);
  }

  egressEnabled(orgId: string): boolean {
    return this.values.egressEnabled(orgId);
  }

  replyEnabled(orgId: string): boolean {
    return this.values.replyEnabled(orgId);
  }
}

interface FlagChange {
  flag: string;
  scope: string;
  enabled: boolean | "default";
  by?: string;
  reason?: string;
}

function diff(before: readonly FlagRow[], after: readonly FlagRow[]): FlagChange[] {
  const id = (row: FlagRow) => `${row.name} ${describeScope(row.scopeKind, row.scope)}`;
  const old = new Map(before.map((row) => [id(row), row]));
  const changes: FlagChange[] = [];
  for (const row of after) {
    const was = old.get(id(row));
    old.delete(id(row));
    if (was?.enabled === row.enabled) continue;
    changes.push({ flag: row.name, scope: describeScope(row.scopeKind, row.scope), enabled: row.enabled, by: row.updatedBy, reason: row.reason });
  }
  for (const row of old.values()) changes.push({ flag: row.name, scope: describeScope(row.scopeKind, row.scope), enabled: "default" });
  return changes;
}


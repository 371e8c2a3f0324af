/**
 * What `LiveFlags` (table `flags`, for coordinators and gateways) and `MirroredFlags` (the coordinators' Redis copy,
 * for harnesses) share: a snapshot of flag rows over the environment's defaults, re-read every `pollMs`, swapped
 * whole so a reader never sees half of a change, and change listeners. Each subclass says only where the rows come
 * from (`refresh`). Reads are synchronous and cheap; they run on every hop.
 */
import type { FlagsConfig } from "../config/index.js";
import { silentLogger, type Logger } from "../logger.js";
import type { DependencyHealth } from "../process/dependency-health.js";
import { TablePoller } from "../process/table-poller.js";
import { describeScope, type FlagName, type FlagRow, type HarnessFlags, type ScopeKind } from "./flag-types.js";
import { FlagValues, type FlagView } from "./flag-values.js";

export interface PolledFlagsOptions {
  /** The environment's defaults (`config.flags`). */
  defaults: FlagsConfig;
  /** @defaultValue defaults.pollMs */
  pollMs?: number;
  /** @defaultValue a silent logger */
  logger?: Logger;
  /** A poll that fails because its store is down is recorded here (which logs the outage) instead of logged itself. */
  health?: DependencyHealth;
}

export abstract class PolledFlags implements HarnessFlags {
  protected values: FlagValues;
  protected readonly logger: Logger;
  private readonly listeners = new Set<() => void>();
  private readonly poller: TablePoller;
  private readonly defaults: FlagsConfig;

  /** `what` names the source in the poller's log lines ("flags", "the flag mirror"). */
  protected constructor(what: string, options: PolledFlagsOptions) {
    this.defaults = options.defaults;
    this.values = new FlagValues(options.defaults, []);
    this.logger = (options.logger ?? silentLogger).child({ component: "flags" });
    this.poller = new TablePoller({
      what,
      refresh: () => this.refresh(),
      pollMs: options.pollMs ?? options.defaults.pollMs,
      logger: this.logger,
      ...(options.health ? { health: options.health } : {}),
    });
  }

  /** Reads the source now and swaps the snapshot; throws when the source does not answer. */
  abstract refresh(): Promise<void>;

  /** Starts polling every `pollMs` until `stop()` or the signal. Idempotent. */
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

  harnessEnabled(kind: "role" | "team", name: string): boolean {
    return this.values.harnessEnabled(kind, name);
  }

  busRouted(kind: "role" | "team", name: string): boolean {
    return this.values.busRouted(kind, name);
  }

  /**
   * Puts `rows` in force. The first swap logs what was read whole (`firstMessage`), later ones log the changes;
   * listeners hear about a change, and one that throws does not stop the others.
   */
  protected swap(rows: readonly FlagRow[], first: boolean, firstMessage: string): void {
    const previous = this.values;
    this.values = new FlagValues(this.defaults, rows);
    const changes = diff(previous.rows, rows);
    if (first) this.logger.info({ stored: changes }, firstMessage);
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

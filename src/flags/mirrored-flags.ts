/**
 * The live flags of a harness, read from Redis instead of table `flags` (issue 27 §3: workers hold no database
 * credentials). The coordinators copy the table's rows into one key (`flag-mirror.ts`); this polls it every
 * `pollMs` and lays the rows over the environment's defaults exactly as `LiveFlags` does, so a change made with
 * `switchyard flags set` reaches a harness within about two polls (the coordinator's read, then this one's).
 *
 * Nothing here imports `store/`, not even through another module: a harness has no database to import.
 *
 * What a poll may find:
 * - a good value: swapped in whole (readers see one consistent snapshot), subscribers hear about a change;
 * - no key, before anything was read: the environment's defaults (no coordinator has mirrored yet), said once;
 * - no key after a good value: the last values are kept. Coordinators never delete the key, so its absence means
 *   Redis lost it (a restart without persistence), and a harness a flag turned off must not come back on because
 *   of that; any running coordinator writes it again within a poll;
 * - a value this build cannot read (garbage, another version): the last values are kept, said once per run;
 * - Redis not answering: `refresh()` throws, the poller keeps the last values (logged as LiveFlags does).
 */
import type { RedisClient } from "../bus/redis-connection.js";
import type { FlagsConfig } from "../config/index.js";
import { silentLogger, type Logger } from "../logger.js";
import type { DependencyHealth } from "../process/dependency-health.js";
import { TablePoller } from "../process/table-poller.js";
import { flagMirrorKey, parseFlagMirror, type FlagMirrorDocument } from "./flag-mirror.js";
import type { FlagName, FlagRow, HarnessFlags, ScopeKind } from "./flag-types.js";
import { FlagValues, type FlagView } from "./flag-values.js";

export interface MirroredFlagsOptions {
  /** The bus's Redis: where the coordinators mirror the flags. */
  redis: RedisClient;
  /** `config.bus.keyPrefix`, the same as the coordinators'. */
  keyPrefix: string;
  /** The environment's defaults (`config.flags`). */
  defaults: FlagsConfig;
  /** @defaultValue defaults.pollMs */
  pollMs?: number;
  /** @defaultValue a silent logger */
  logger?: Logger;
  /** A poll that fails because Redis is down is recorded here (which logs the outage) instead of logged itself. */
  health?: DependencyHealth;
}

/** What the last poll found, so each kind of trouble is said once when it starts and once when it ends. */
type Finding = "value" | "absent" | "lost" | "unreadable";

export class MirroredFlags implements HarnessFlags {
  readonly key: string;
  private values: FlagValues;
  private readonly logger: Logger;
  private readonly listeners = new Set<() => void>();
  private readonly poller: TablePoller;
  private everAnswered = false;
  private mirrored: FlagMirrorDocument | undefined;
  private finding: Finding | undefined;
  /** Whether a mirrored value has been read (its first read is logged whole, later ones as changes). */
  private announced = false;

  constructor(private readonly options: MirroredFlagsOptions) {
    this.key = flagMirrorKey(options.keyPrefix);
    this.values = new FlagValues(options.defaults, []);
    this.logger = (options.logger ?? silentLogger).child({ component: "flags" });
    this.poller = new TablePoller({
      what: "the flag mirror",
      refresh: () => this.refresh(),
      pollMs: options.pollMs ?? options.defaults.pollMs,
      logger: this.logger,
      ...(options.health ? { health: options.health } : {}),
    });
  }

  /** True once Redis has answered a poll (the key may have been absent: then the defaults are what was read). */
  get loaded(): boolean {
    return this.everAnswered;
  }

  /** When a coordinator read the rows in force from the table (its clock), or undefined while none were mirrored. */
  get mirroredAtMs(): number | undefined {
    return this.mirrored?.atMs;
  }

  /**
   * Reads the key now and swaps the snapshot; subscribers hear about changes. Throws only when Redis does not
   * answer: an absent or unreadable value is handled (see the module comment) and logged, never thrown, so a
   * harness starting beside a half-written or newer-version mirror still starts.
   */
  async refresh(): Promise<void> {
    const text = await this.options.redis.get(this.key);
    this.everAnswered = true;
    if (text === null) {
      this.found(this.mirrored ? "lost" : "absent");
      return;
    }
    let document: FlagMirrorDocument;
    try {
      document = parseFlagMirror(text);
    } catch (error) {
      if (this.finding !== "unreadable") this.logger.warn({ err: error, key: this.key }, "the flag mirror cannot be read; keeping the last flag values");
      this.finding = "unreadable";
      return;
    }
    this.found("value");
    this.mirrored = document;
    this.swap(document.rows);
  }

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

  /** The mirrored rows in force. */
  rows(): readonly FlagRow[] {
    return this.values.rows;
  }

  /** Every flag value in force, environment defaults included (for listings and metrics). */
  describe(): FlagView[] {
    return this.values.describe();
  }

  /** One scope's own value (its mirrored row, else the environment default), without the global master switch. */
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

  private found(finding: Finding): void {
    const before = this.finding;
    this.finding = finding;
    if (before === finding) return;
    const log = { key: this.key };
    if (finding === "absent") this.logger.info(log, "no flags mirrored in Redis yet; obeying the environment's defaults");
    else if (finding === "lost") this.logger.warn(log, "the flag mirror is gone from Redis; keeping the last flag values until a coordinator writes it again");
    else if (before === "unreadable" || before === "lost") this.logger.info(log, "the flag mirror is readable again");
  }

  private swap(rows: readonly FlagRow[]): void {
    const previous = this.values;
    const first = !this.announced;
    this.announced = true;
    this.values = new FlagValues(this.options.defaults, rows);
    const changes = diff(previous.rows, rows);
    if (first) this.logger.info({ stored: changes }, "flags read from the mirror");
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

// As LiveFlags logs them; written again here because flag-store.ts (describeScope) sits on the database.
function diff(before: readonly FlagRow[], after: readonly FlagRow[]): FlagChange[] {
  const scopeOf = (row: FlagRow) => (row.scopeKind === "global" ? "global" : `${row.scopeKind}:${row.scope}`);
  const id = (row: FlagRow) => `${row.name} ${scopeOf(row)}`;
  const old = new Map(before.map((row) => [id(row), row]));
  const changes: FlagChange[] = [];
  for (const row of after) {
    const was = old.get(id(row));
    old.delete(id(row));
    if (was?.enabled === row.enabled) continue;
    changes.push({ flag: row.name, scope: scopeOf(row), enabled: row.enabled, by: row.updatedBy, reason: row.reason });
  }
  for (const row of old.values()) changes.push({ flag: row.name, scope: scopeOf(row), enabled: "default" });
  return changes;
}

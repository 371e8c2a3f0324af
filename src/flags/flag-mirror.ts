/**
 * The coordinator's side of the flag mirror (issue 27 §3: workers hold no database credentials). Harnesses cannot
 * read table `flags`, so every coordinator copies the rows it reads into one Redis key, and a harness polls that
 * key (`mirrored-flags.ts`).
 *
 * Key `${keyPrefix}flags:mirror`, value `{"v":1,"atMs":<ms of the read>,"rows":[FlagRow…]}`: the table's rows only,
 * never the environment defaults — each process applies its own `config.flags` under them, as with table `flags`.
 *
 * The rows are written after every successful read, not only on a change: a lost write, a Redis restart or a
 * write from a coordinator that read a moment earlier is overwritten within one poll (one SET a second per
 * coordinator). No TTL: a harness must go on obeying a flag that turned it off while every coordinator is down.
 *
 * The wire format (key, version, parser) lives here too, so the writer and the reader cannot drift apart. This
 * module's runtime imports are leaves, `bus/keys.ts` and `flag-types.ts` only (LiveFlags and ioredis are types
 * here): the harness imports it without pulling in anything of `store/`.
 */
import { assertKeyPrefix } from "../bus/keys.js";
import type { RedisClient } from "../bus/redis-connection.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import type { DependencyHealth } from "../process/dependency-health.js";
import { FLAG_NAMES, FLAG_SCOPES, type FlagName, type FlagRow, type ScopeKind } from "./flag-types.js";
import type { LiveFlags } from "./live-flags.js";

/** The version of the mirror's value this build writes and reads. */
export const FLAG_MIRROR_VERSION = 1;

/** The one Redis key that holds the mirrored rows. No hash tag: it is a key of its own, touched by no script. */
export function flagMirrorKey(keyPrefix: string): string {
  assertKeyPrefix(keyPrefix);
  return `${keyPrefix}flags:mirror`;
}

/** The value stored at `flagMirrorKey`. */
export interface FlagMirrorDocument {
  v: typeof FLAG_MIRROR_VERSION;
  /** When the coordinator read these rows from the table (its clock, ms since the epoch). */
  atMs: number;
  rows: FlagRow[];
}

export function encodeFlagMirror(rows: readonly FlagRow[], atMs: number): string {
  const document: FlagMirrorDocument = { v: FLAG_MIRROR_VERSION, atMs, rows: [...rows] };
  return JSON.stringify(document);
}

function malformed(reason: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.FailedPrecondition, `the flag mirror holds a value this process cannot read: ${reason}`, { details: { reason } });
}

/**
 * Reads a mirror value. Throws FAILED_PRECONDITION when it is not JSON, has another version, or has a malformed row.
 * A row of a flag this build does not know is dropped, not refused, as `listFlags` does with the table: a newer
 * release adding a flag must not blind the older harnesses to all the others.
 */
export function parseFlagMirror(text: string): FlagMirrorDocument {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw malformed("not JSON");
  }
  if (!isObject(value)) throw malformed("not a JSON object");
  if (value.v !== FLAG_MIRROR_VERSION) throw malformed(`version ${JSON.stringify(value.v)} (this build reads ${FLAG_MIRROR_VERSION})`);
  if (typeof value.atMs !== "number" || !Number.isFinite(value.atMs)) throw malformed("atMs is not a number");
  if (!Array.isArray(value.rows)) throw malformed("rows is not an array");
  const rows: FlagRow[] = [];
  value.rows.forEach((row: unknown, i: number) => {
    if (!isObject(row)) throw malformed(`rows[${i}] is not an object`);
    if (typeof row.name !== "string") throw malformed(`rows[${i}].name is not a string`);
    if (!(FLAG_NAMES as readonly string[]).includes(row.name)) return;
    const name = row.name as FlagName;
    if (!(FLAG_SCOPES[name] as readonly unknown[]).includes(row.scopeKind)) throw malformed(`rows[${i}].scopeKind is not a scope of ${name}`);
    for (const field of ["scope", "updatedBy", "reason", "updatedAt"] as const) {
      if (typeof row[field] !== "string") throw malformed(`rows[${i}].${field} is not a string`);
    }
    if (typeof row.enabled !== "boolean") throw malformed(`rows[${i}].enabled is not a boolean`);
    rows.push({
      name,
      scopeKind: row.scopeKind as ScopeKind,
      scope: row.scope as string,
      enabled: row.enabled,
      updatedBy: row.updatedBy as string,
      reason: row.reason as string,
      updatedAt: row.updatedAt as string,
    });
  });
  return { v: FLAG_MIRROR_VERSION, atMs: value.atMs, rows };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export interface FlagMirrorOptions {
  /** The coordinator's live flags: each successful read of the table is mirrored. */
  flags: Pick<LiveFlags, "onRead" | "loaded" | "rows">;
  redis: RedisClient;
  /** `config.bus.keyPrefix`. */
  keyPrefix: string;
  /** @defaultValue a silent logger */
  logger?: Logger;
  /** A write that fails because Redis is down is recorded here (which logs the outage) instead of logged itself. */
  health?: DependencyHealth;
  /** @defaultValue Date.now */
  clock?: () => number;
}

/**
 * Writes what `flags` reads to the mirror key. Writes never block the poll and never throw: a failed one is logged
 * (once per run of failures) and the next read writes again. While a write is on its way, reads that finish are
 * coalesced into one write of the newest rows, so a Redis outage queues one value, not one per poll, and an older
 * read never lands after a newer one from this process.
 */
export class FlagMirror {
  readonly key: string;
  private readonly logger: Logger;
  private readonly clock: () => number;
  private unsubscribe: (() => void) | undefined;
  private next: { rows: readonly FlagRow[]; atMs: number } | undefined;
  private writing: Promise<void> | undefined;
  private failing = false;

  constructor(private readonly options: FlagMirrorOptions) {
    this.key = flagMirrorKey(options.keyPrefix);
    this.logger = (options.logger ?? silentLogger).child({ component: "flag-mirror" });
    this.clock = options.clock ?? Date.now;
  }

  /**
   * Mirrors every read from now until `stop()` or the signal, starting with the current rows if the table has been
   * read. Before the first read the mirror is left alone: writing the empty snapshot of a coordinator that has not
   * read yet would put back the defaults for every harness. Idempotent.
   */
  start(signal?: AbortSignal): void {
    if (this.unsubscribe || signal?.aborted) return;
    this.unsubscribe = this.options.flags.onRead((rows) => this.schedule(rows));
    signal?.addEventListener("abort", () => void this.stop(), { once: true });
    if (this.options.flags.loaded) this.schedule(this.options.flags.rows());
  }

  /** Stops mirroring; resolves once the write on its way (if any) has finished. */
  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.next = undefined;
    await this.writing;
  }

  /** Resolves once every write scheduled so far has been tried (for tests and an orderly shutdown). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private schedule(rows: readonly FlagRow[]): void {
    this.next = { rows, atMs: this.clock() };
    if (!this.writing) this.writing = this.drain();
  }

  private async drain(): Promise<void> {
    while (this.next) {
      const { rows, atMs } = this.next;
      this.next = undefined;
      await this.write(rows, atMs);
    }
    this.writing = undefined;
  }

  private async write(rows: readonly FlagRow[], atMs: number): Promise<void> {
    try {
      await this.options.redis.set(this.key, encodeFlagMirror(rows, atMs));
      if (this.failing) this.logger.info({ key: this.key }, "mirroring flags to Redis works again");
      this.failing = false;
    } catch (error) {
      if (this.options.health?.absorb(error)) this.logger.debug({ err: error, key: this.key }, "mirroring flags to Redis failed; writing again at the next read");
      else if (!this.failing) this.logger.warn({ err: error, key: this.key }, "mirroring flags to Redis failed; writing again at the next read");
      this.failing = true;
    }
  }
}

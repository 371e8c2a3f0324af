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
import { flagMirrorKey, parseFlagMirror, type FlagMirrorDocument } from "./flag-mirror.js";
import { PolledFlags, type PolledFlagsOptions } from "./polled-flags.js";

export interface MirroredFlagsOptions extends PolledFlagsOptions {
  /** The bus's Redis: where the coordinators mirror the flags. */
  redis: RedisClient;
  /** `config.bus.keyPrefix`, the same as the coordinators'. */
  keyPrefix: string;
}

/** What the last poll found, so each kind of trouble is said once when it starts and once when it ends. */
type Finding = "value" | "absent" | "lost" | "unreadable";

export class MirroredFlags extends PolledFlags {
  readonly key: string;
  private everAnswered = false;
  private mirrored: FlagMirrorDocument | undefined;
  private finding: Finding | undefined;
  /** Whether a mirrored value has been read (its first read is logged whole, later ones as changes). */
  private announced = false;

  constructor(private readonly options: MirroredFlagsOptions) {
    super("the flag mirror", options);
    this.key = flagMirrorKey(options.keyPrefix);
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
    const first = !this.announced;
    this.announced = true;
    this.swap(document.rows, first, "flags read from the mirror");
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
}

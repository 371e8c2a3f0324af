/**
 * The flags a running process obeys: environment defaults with table `flags` on top, re-read every `pollMs`
 * (default 1 s), so a change made with `switchyard flags set` (or the admin API) is in force in every process
 * within about a second, without a restart. Reads are synchronous and cheap (an in-memory snapshot swapped
 * whole on each poll); a failed poll keeps the last good snapshot and says so in the log.
 *
 * This object is the `EgressSwitch` the engine's tenant facts read, the `CoordinatorFlags` of a coordinator and
 * the `HarnessFlags` of a harness.
 */
import type { Queryable } from "../store/db.js";
import type { FlagStore } from "../store/flags/flag-store.js";
import type { FlagRow, FlagSwitches, TenantSelection } from "./flag-types.js";
import { PolledFlags, type PolledFlagsOptions } from "./polled-flags.js";

export interface LiveFlagsOptions extends PolledFlagsOptions {
  /** Where table `flags` lives. */
  db: Queryable;
  /** How it is read (`runtime.stores.flags`). */
  store: Pick<FlagStore, "list">;
}

export class LiveFlags extends PolledFlags implements FlagSwitches {
  private readonly readListeners = new Set<(rows: readonly FlagRow[]) => void>();
  private everLoaded = false;

  constructor(private readonly options: LiveFlagsOptions) {
    super("flags", options);
  }

  /** True once the table has been read at least once (before that, the environment's defaults apply). */
  get loaded(): boolean {
    return this.everLoaded;
  }

  /** Reads the table now and swaps the snapshot; listeners hear about changes. Throws when the read fails. */
  async refresh(): Promise<void> {
    const rows = await this.options.store.list(this.options.db);
    const first = !this.everLoaded;
    this.everLoaded = true;
    this.swap(rows, first, "flags read");
    for (const listener of this.readListeners) {
      try {
        listener(rows);
      } catch (error) {
        this.logger.warn({ err: error }, "a flag read listener failed");
      }
    }
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

  coordinatorEnabled(orgId: string): boolean {
    return this.values.coordinatorEnabled(orgId);
  }

  coordinatorTenants(): TenantSelection {
    return this.values.coordinatorTenants();
  }

  egressEnabled(orgId: string): boolean {
    return this.values.egressEnabled(orgId);
  }

  replyEnabled(orgId: string): boolean {
    return this.values.replyEnabled(orgId);
  }
}

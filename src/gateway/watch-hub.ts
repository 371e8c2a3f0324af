/**
 * The gateway's Watch streams share one change poller, and there is a limit to how many may be open.
 *
 * Why shared: a stream per task polling on its own costs one pooled query per stream per interval, so a few
 * hundred idle streams from one tenant queue every other tenant's calls behind them (300 streams took another
 * tenant's `List` from 0.01 s to 1.27 s). Here ONE query per interval, whatever the number of streams, reads a
 * fingerprint of every watched task (its status and each step's status, attempt and approval); only the streams
 * whose task changed are woken, and each then re-reads its view through its own tenant-scoped transaction. An
 * idle stream holds no connection and issues no query of its own.
 *
 * Why limited: each open stream is a socket and a waiter in this process. A tenant gets at most
 * `limits.perTenant`, the process at most `limits.total`; one more is refused with RESOURCE_EXHAUSTED at once
 * (a client can poll TaskService.Get instead). A slot is freed when its stream ends, however it ends.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "../logger.js";
import type { Queryable } from "../store/db.js";
import type { TaskReadStore } from "../store/tasks/task-read-store.js";
import { isUuid } from "../domain.js";

export interface WatchLimits {
  /** Streams one tenant may have open in this process. */
  perTenant: number;
  /** Streams this process serves at once, all tenants together. */
  total: number;
}

export interface WatchHubOptions {
  /** The owner's pool: the fingerprint query spans tenants (it returns no data, only whether a task changed). */
  db: Queryable;
  /** Where the fingerprints are read (`runtime.stores.taskReads`). */
  reads: Pick<TaskReadStore, "fingerprints">;
  /** How often the watched tasks are checked (ms). */
  intervalMs: number;
  limits: WatchLimits;
  logger: Logger;
}

/** One open stream's place in the hub. */
export interface WatchSlot {
  /**
   * Resolves once the hub has seen the task change since the previous call (or the first time it looks at it), or
   * when `signal` aborts.
   */
  changed(signal: AbortSignal): Promise<void>;
  /** Frees the slot; idempotent. */
  release(): void;
}

interface Subscriber {
  taskId: string;
  dirty: boolean;
  wake: (() => void) | undefined;
}

export class WatchHub {
  private readonly subscribers = new Set<Subscriber>();
  private readonly perTenant = new Map<string, number>();
  /** The last fingerprint seen per watched task; dropped when no stream watches it any more. */
  private readonly seen = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private closed = false;
  private failing = false;

  constructor(private readonly options: WatchHubOptions) {}

  /** Streams open now, in total and per tenant. */
  get counts(): { total: number; byTenant: ReadonlyMap<string, number> } {
    return { total: this.subscribers.size, byTenant: new Map(this.perTenant) };
  }

  /** Takes a slot for a stream of `orgId` watching `taskId`, or throws RESOURCE_EXHAUSTED. */
  open(orgId: string, taskId: string): WatchSlot {
    const { perTenant, total } = this.options.limits;
    const ofTenant = this.perTenant.get(orgId) ?? 0;
    if (ofTenant >= perTenant) {
      throw new ConnectError(
        `tenant ${orgId} already has ${ofTenant} Watch streams open, the most allowed per tenant (SWITCHYARD_WATCH_MAX_PER_TENANT); close one, or poll TaskService.Get`,
        Code.ResourceExhausted,
      );
    }
    if (this.subscribers.size >= total) {
      throw new ConnectError(
        `this gateway already serves ${this.subscribers.size} Watch streams, the most it allows (SWITCHYARD_WATCH_MAX_STREAMS); try again later, or poll TaskService.Get`,
        Code.ResourceExhausted,
      );
    }
    const subscriber: Subscriber = { taskId, dirty: false, wake: undefined };
    this.subscribers.add(subscriber);
    this.perTenant.set(orgId, ofTenant + 1);
    this.schedule();
    let released = false;
    return {
      changed: (signal) => this.changed(subscriber, signal),
      release: () => {
        if (released) return;
        released = true;
        this.subscribers.delete(subscriber);
        const left = (this.perTenant.get(orgId) ?? 1) - 1;
        if (left > 0) this.perTenant.set(orgId, left);
        else this.perTenant.delete(orgId);
        if (![...this.subscribers].some((s) => s.taskId === taskId)) this.seen.delete(taskId);
        subscriber.wake?.();
      },
    };
  }

  /** Stops polling; open streams are ended by their own signals (the gateway's `stopping`). */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const subscriber of this.subscribers) subscriber.wake?.();
  }

  private changed(subscriber: Subscriber, signal: AbortSignal): Promise<void> {
    if (subscriber.dirty || signal.aborted || this.closed) {
      subscriber.dirty = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener("abort", done);
        subscriber.wake = undefined;
        subscriber.dirty = false;
        resolve();
      };
      subscriber.wake = done;
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /** One timer for the whole hub, armed only while some stream is open; never two polls at once. */
  private schedule(): void {
    if (this.closed || this.timer || this.polling || this.subscribers.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.poll();
    }, this.options.intervalMs);
  }

  private async poll(): Promise<void> {
    this.polling = true;
    try {
      const ids = [...new Set([...this.subscribers].map((s) => s.taskId))];
      if (ids.length === 0) return;
      // One malformed id must not fail the shared query for every stream; it simply matches no task.
      const now = await this.options.reads.fingerprints(this.options.db, ids.filter(isUuid));
      if (this.failing) this.options.logger.info("watch poller reads tasks again");
      this.failing = false;
      for (const id of ids) {
        // A task that is gone (or never was) counts as changed: its streams re-read it and end with NOT_FOUND.
        const fingerprint = now.get(id) ?? "";
        if (this.seen.get(id) === fingerprint && now.has(id)) continue;
        this.seen.set(id, fingerprint);
        for (const subscriber of this.subscribers) {
          if (subscriber.taskId !== id) continue;
          subscriber.dirty = true;
          subscriber.wake?.();
        }
      }
    } catch (error) {
      // Streams wait for the next poll rather than fail: a database blip is not the end of a watch. Logged once.
      if (!this.failing) this.options.logger.warn({ err: error }, "watch poller cannot read tasks; open Watch streams wait until it can");
      this.failing = true;
    } finally {
      this.polling = false;
      this.schedule();
    }
  }
}

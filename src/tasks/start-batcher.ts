/**
 * Group commit for task starts (issue 11 §2): the starts of one tenant that arrive while its previous batch commits
 * start together in ONE transaction (TaskService.startEach: one insert of the tasks, one of their steps, one of
 * their start envelopes or one engine batch, one commit, one publish pipeline). Each caller gets its own outcome:
 * a bad request fails alone, in the batch; a batch that fails as a whole (a deadlock, a hook's error) is re-run
 * item by item by the MicroBatcher, unless the database is unreachable.
 */
import type { PoolClient } from "../store/db.js";
import { isDatabaseUnavailable } from "../store/db.js";
import { MicroBatcher } from "../store/micro-batcher.js";
import { activeTraceparent } from "../telemetry/traceparent.js";
import { tracingOn } from "../telemetry/tracing.js";
import type { StartedTask, StartSettled } from "./task-starts.js";
import type { StartTaskRequest, TaskService } from "./tasks.js";

export interface StartBatcherOptions<I> {
  tasks: Pick<TaskService, "startEach" | "startsThroughOwner">;
  /** The start an item asks for. */
  request: (item: I) => StartTaskRequest;
  /** Runs in the starting transaction with the items that created their task (e.g. one insert of delivery rows). */
  onCreated?: (client: PoolClient, created: ReadonlyArray<{ item: I; taskId: string }>) => Promise<void>;
  /** Largest batch. @defaultValue 100 */
  maxBatch?: number;
}

/**
 * Batches of one tenant committing at once. Inline starts append to the tenant's audit chain under its head lock,
 * so a second batch would only queue on it; starts through the owner share no row, only the WAL flush.
 */
const INLINE_IN_FLIGHT = 1;
const OWNER_IN_FLIGHT = 2;

export class StartBatcher<I> {
  private readonly batchers = new Map<string, MicroBatcher<I, StartSettled>>();
  /** Tracing on: each item's caller span (the batch runs outside the callers' contexts). */
  private readonly callerTrace = new WeakMap<object, string>();

  constructor(private readonly options: StartBatcherOptions<I>) {}

  async start(item: I): Promise<StartedTask> {
    if (tracingOn() && typeof item === "object" && item !== null) {
      const traceparent = activeTraceparent();
      if (traceparent) this.callerTrace.set(item, traceparent);
    }
    const settled = await this.batcherOf(this.options.request(item).orgId).submit(item);
    if (!settled.ok) throw settled.error;
    return settled.started;
  }

  private requestOf(item: I): StartTaskRequest {
    const request = this.options.request(item);
    const traceparent = typeof item === "object" && item !== null ? this.callerTrace.get(item) : undefined;
    return traceparent && !request.traceparent ? { ...request, traceparent } : request;
  }

  private batcherOf(orgId: string): MicroBatcher<I, StartSettled> {
    let batcher = this.batchers.get(orgId);
    if (!batcher) {
      const { tasks, onCreated } = this.options;
      batcher = new MicroBatcher({
        run: (items) =>
          tasks.startEach(
            orgId,
            items.map((item) => this.requestOf(item)),
            onCreated ? { onCreated: (client, created) => onCreated(client, created.map((c) => ({ item: items[c.index]!, taskId: c.taskId }))) } : {},
          ),
        maxBatch: this.options.maxBatch ?? 100,
        maxInFlight: tasks.startsThroughOwner ? OWNER_IN_FLIGHT : INLINE_IN_FLIGHT,
        // An unreachable database would only fail again item by item.
        isolate: (error) => !isDatabaseUnavailable(error),
      });
      this.batchers.set(orgId, batcher);
    }
    return batcher;
  }
}

/**
 * Starts the tasks of verified deliveries, group-committed per tenant: the deliveries of one tenant that arrive
 * while its previous batch commits start together in ONE transaction (TaskService.startMany: one insert of the
 * tasks, one of their delivery rows, one engine batch, one audit append under the tenant's chain head, one WAL
 * flush). Started one by one, every start would hold the tenant's audit head until its own commit, capping a
 * tenant at one start per commit.
 *
 * A batch that fails (one delivery's workflow vanished) is re-run delivery by delivery, so only that one fails.
 */
import type { StartTaskRequest, TaskService } from "../coordinator/tasks.js";
import { isDatabaseUnavailable } from "../store/db.js";
import { MicroBatcher } from "../store/micro-batcher.js";
import { recordStartedDeliveries, type DeliveryRecord } from "./delivery-store.js";

export type StartedTask = { taskId: string; created: boolean; workflow: string };

/** A task to start for a delivery, and the delivery row to write in the same transaction when it is created. */
export interface DeliveryStart {
  request: StartTaskRequest;
  delivery: Omit<DeliveryRecord, "cause" | "taskId">;
}

export interface TaskStarter {
  start(item: DeliveryStart): Promise<StartedTask>;
}

export function createBatchedTaskStarter(tasks: Pick<TaskService, "startMany">, options: { maxBatch?: number } = {}): TaskStarter {
  const batchers = new Map<string, MicroBatcher<DeliveryStart, StartedTask>>();
  const run = (orgId: string, items: DeliveryStart[]) =>
    tasks.startMany(
      orgId,
      items.map((i) => i.request),
      {
        onCreated: (client, created) =>
          recordStartedDeliveries(
            client,
            created.map((c) => ({ ...items[c.index]!.delivery, cause: "task_started", taskId: c.taskId })),
          ),
      },
    );
  return {
    start(item) {
      const orgId = item.request.orgId;
      let batcher = batchers.get(orgId);
      if (!batcher) {
        batcher = new MicroBatcher({
          run: (items) => run(orgId, items),
          maxBatch: options.maxBatch ?? 100,
          // An unreachable database would only fail again item by item.
          isolate: (error) => !isDatabaseUnavailable(error),
        });
        batchers.set(orgId, batcher);
      }
      return batcher.submit(item);
    },
  };
}

/**
 * Starts the tasks of verified deliveries, group-committed per tenant (StartBatcher): the deliveries of one tenant
 * that arrive while its previous batch commits start together in ONE transaction, with their delivery rows written
 * by one insert in it. A delivery whose start fails (its workflow vanished) fails alone.
 */
import type { StartTaskRequest, TaskService } from "../tasks/tasks.js";
import { StartBatcher } from "../tasks/start-batcher.js";
import { recordStartedDeliveries, type DeliveryRecord } from "./delivery-store.js";
import type { DeliveryStore } from "../store/ingest/delivery-store.js";

import type { StartedTask } from "../tasks/task-starts.js";

export type { StartedTask } from "../tasks/task-starts.js";

/** A task to start for a delivery, and the delivery row to write in the same transaction when it is created. */
export interface DeliveryStart {
  request: StartTaskRequest;
  delivery: Omit<DeliveryRecord, "cause" | "taskId">;
}

export interface TaskStarter {
  start(item: DeliveryStart): Promise<StartedTask>;
}

export function createBatchedTaskStarter(tasks: Pick<TaskService, "startEach" | "startsThroughOwner">, options: { deliveries: DeliveryStore; maxBatch?: number }): TaskStarter {
  return new StartBatcher<DeliveryStart>({
    tasks,
    request: (item) => item.request,
    onCreated: (client, created) => recordStartedDeliveries(options.deliveries, client, created.map((c) => ({ ...c.item.delivery, cause: "task_started", taskId: c.taskId }))),
    ...(options.maxBatch !== undefined ? { maxBatch: options.maxBatch } : {}),
  });
}

/**
 * Where `task watch` / `task start --wait` read the task from: the API's streaming Watch (in-process in direct
 * mode). The stream is consumed in the background and the watch loop reads the newest view it delivered, so step
 * changes show as soon as the handler sends them and the watch loop's stall detection sees every poll.
 */
import type { TaskView } from "../tasks/tasks.js";
import type { TenantApi } from "./remote/tenant-api.js";

export interface TaskSource {
  get(orgId: string, taskId: string): Promise<TaskView>;
  close(): void;
}

export function taskSource(api: TenantApi, taskId: string): TaskSource {
  const controller = new AbortController();
  let latest: TaskView | undefined;
  let failure: unknown;
  let ended = false;
  let arrived: () => void = () => {};
  let first = new Promise<void>((resolve) => (arrived = resolve));
  const stream = api.watchTask(taskId, controller.signal);
  void (async () => {
    try {
      for await (const view of stream) {
        latest = view;
        arrived();
      }
    } catch (error) {
      if (!controller.signal.aborted) failure = error;
    } finally {
      ended = true;
      arrived();
    }
  })();
  return {
    async get() {
      await first;
      if (failure !== undefined) throw failure;
      // A stream that ended without a view (the gateway closed it at once): read the task instead.
      if (latest === undefined || (ended && latest.status === "running")) {
        latest = await api.getTask(taskId);
        first = Promise.resolve();
      }
      return latest;
    },
    close: () => controller.abort(),
  };
}

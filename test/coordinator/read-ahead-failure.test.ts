/**
 * The coordinator reads its next inbox batch while it applies the current one (a read-ahead). A read-ahead that
 * fails must cost one failed round, not the inbox: before the fix its rejected promise was kept and awaited again
 * on every turn of the loop, so nothing more was ever read and every later step timed out. Redis produced such a
 * failure when its data was flushed under a blocked read (test/integration/redis-loss.test.ts).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Bus } from "../../src/bus/bus.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { Workers } from "../support/workers.js";

const ORG = "acme";
// Long timeouts: only the inbox can move the task on, never a retry.
const WORKFLOW = 'name: two\nsteps:\n  - { id: a, to: "role:w", timeout: 10m }\n  - { id: b, to: "role:w", timeout: 10m }\n';

/** The coordinator's bus, whose first inbox read issued after a read that returned entries (the read-ahead) fails. */
function failingFirstReadAhead(bus: Bus): { bus: Bus; failed: () => boolean } {
  let sawEntries = false;
  let failed = false;
  return {
    bus: {
      ...bus,
      // The coordinator reads its shard inboxes (and the shared one) in one readMany.
      async readMany(options) {
        if (sawEntries && !failed) {
          failed = true;
          throw new SwitchyardError(ErrorCode.Unavailable, "bus read failed: UNBLOCKED the stream key no longer exists");
        }
        const entries = await bus.readMany(options);
        if (entries.length > 0) sawEntries = true;
        return entries;
      },
    },
    failed: () => failed,
  };
}

describe("a failed inbox read-ahead", () => {
  let rt: TestRuntime | undefined;
  let workers: Workers | undefined;
  afterEach(async () => {
    await workers?.stop();
    await rt?.cleanup();
  });

  it("is given up after one failed round; the inbox is read again and the task completes", async () => {
    rt = await createTestRuntime();
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(WORKFLOW));
    const faulty = failingFirstReadAhead(rt.bus);
    rt.startCoordinator({ bus: faulty.bus });
    workers = new Workers(rt);
    workers.start("w", async (work) => ({ step: work.stepId }));

    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "two", input: {} });
    const view = await waitForTask(rt.tasks, ORG, taskId, { stallMs: 5_000 });
    expect(faulty.failed()).toBe(true);
    expect(view.status).toBe("completed");
  });
});

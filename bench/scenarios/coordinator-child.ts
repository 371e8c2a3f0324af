/**
 * A coordinator in its own process, as deployed beside a gateway: the callback scenario's route runs in the bench
 * process and the coordinator that applies the RESULTs it queues runs here, so the two do not share one thread.
 * It is the deployed coordinator (`createCoordinator`: live flags, checkpoint job) without the FOREIGN sender and
 * sweep, which would try to send the bench's bridges. Its whole Config arrives as the child's JSON argument.
 */
import { BENCH_BUS_SECRETS } from "../support.js";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import type { Config } from "../../src/config/index.js";
import { COORDINATOR_GROUP } from "../../src/coordinator/coordinator.js";
import { createCoordinator } from "../../src/coordinator-process.js";
import { createRuntime } from "../../src/runtime.js";
import { forkChild, runAsChild, type ForkedChild } from "./child-process.js";

/** The coordinator's transactions so far and the inbox entries they applied. */
export interface CoordinatorSample {
  batches: number;
  entries: number;
}

export type CoordinatorProcess = ForkedChild<CoordinatorSample, object>;

/** Forks a coordinator process and resolves once it reads its inbox; with `profileDir` it writes its V8 CPU profile there on exit. */
export function startCoordinatorProcess(config: Config, profileDir?: string): Promise<CoordinatorProcess> {
  return forkChild(import.meta.url, config, profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : []);
}

runAsChild<Config, CoordinatorSample, object>(import.meta.url, "coordinator", {
  async start(config) {
    // The config arrives as JSON, where the secrets' bytes do not survive: the bench's secret is a constant.
    const runtime = await createRuntime({ ...config, busAuth: { secrets: BENCH_BUS_SECRETS, publisherKeys: [] } }, { poolSize: 4 });
    // As `switchyard start coordinator` builds it (live flags, checkpoint job), minus the FOREIGN jobs.
    const coordinator = createCoordinator(runtime, { consumer: `bench-coordinator-${process.pid}`, foreignJobs: false });
    // Before "ready": RESULTs published after it must find the group (ensureGroup is idempotent; start repeats it).
    await runtime.bus.ensureGroup(COORDINATOR_STREAM, COORDINATOR_GROUP);
    const running = coordinator.start();
    return {
      async sample() {
        const { values } = await runtime.metrics.batchSize.get();
        const batches = values.find((v) => v.metricName?.endsWith("_count"))?.value ?? 0;
        const entries = values.find((v) => v.metricName?.endsWith("_sum"))?.value ?? 0;
        return { batches, entries };
      },
      async stop() {
        await coordinator.close();
        await running;
        await runtime.close();
        return {};
      },
    };
  },
});

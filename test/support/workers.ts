/** Starts real harnesses on a test runtime's bus; stops them all in `stop()`. */
import type { HarnessFlags } from "../../src/flags/flag-types.js";
import { createHarness, type Handler, type Harness } from "../../src/harness/index.js";
import { createStepResultReader } from "../../src/store/step-result-reader.js";
import { waitForReplyOutcome } from "../../src/replies/reply-outcome.js";
import type { TestRuntime } from "./runtime.js";

export interface WorkerOptions {
  concurrency?: number;
  consumer?: string;
  flags?: HarnessFlags;
  replyDeadlineMs?: number;
}

export class Workers {
  private readonly harnesses: Harness[] = [];
  constructor(private readonly runtime: TestRuntime) {}

  /** Starts a harness obeying the runtime's live flags (pass `flags` to override, e.g. with your own switch). */
  start(role: string, handler: Handler, options: WorkerOptions = {}): Harness {
    return this.launch({ role }, `role:${role}`, handler, options);
  }

  /** Starts a harness consuming the team queue `team:NAME` (and speaking as the team), like `start` does for a role. */
  startTeam(team: string, handler: Handler, options: WorkerOptions = {}): Harness {
    return this.launch({ team }, `team:${team}`, handler, options);
  }

  private launch(queue: { role: string } | { team: string }, identity: string, handler: Handler, options: WorkerOptions): Harness {
    const harness = createHarness({
      bus: this.runtime.bus,
      ...queue,
      handler,
      signer: this.runtime.busAuth.signer(identity),
      concurrency: options.concurrency ?? 10,
      consumer: options.consumer,
      maxPayloadBytes: this.runtime.config.bus.maxPayloadBytes,
      reclaimIdleMs: this.runtime.config.bus.reclaimIdleMs,
      heartbeatMs: this.runtime.config.harness.heartbeatMs,
      shutdownGraceMs: this.runtime.config.harness.shutdownGraceMs,
      blockMs: 100,
      resultReader: createStepResultReader({ db: this.runtime.pool }),
      // On the reply rows: these tests' coordinators run no outcome relay (the Redis path has its own tests).
      replies: { waitForOutcome: (query, wait) => waitForReplyOutcome(this.runtime.stores.replies, this.runtime.pool, query, wait), deadlineMs: options.replyDeadlineMs ?? 10_000 },
      flags: options.flags ?? this.runtime.flags,
    });
    this.harnesses.push(harness);
    void harness.start();
    return harness;
  }

  async stop(): Promise<void> {
    await Promise.all(this.harnesses.map((h) => h.close()));
  }
}

/**
 * The worker harness: consumes a role (or team) stream, runs the handler for each WORK and REPLY with an
 * AbortSignal, and sends the outcome (RESULT, or a QUERY when the handler delegates — to one destination or many —
 * or keeps waiting) to the coordinator. See `types.ts` for the handler surface, the resume signature of delegation
 * and fan-out.
 *
 * Lifecycle: `start()` reads until the harness is stopped (`close()` or the `signal` option), then drains:
 * in-flight turns get `shutdownGraceMs` to finish; the rest are abandoned (their signal aborted, their entries
 * left unacknowledged so another worker reclaims them) and `start()` resolves.
 *
 * This file wires the parts, each built once per harness: the options settled (harness-options.ts), the delivery
 * loop and its reclaims (delivery-loop.ts), the concurrency slots (turn-slots.ts), entries into turns
 * (turn-dispatch.ts, dead-letters.ts), the flags gate (flags-gate.ts), the counters and metrics (turn-tally.ts) and
 * the shutdown (shutdown.ts).
 */
import { DependencyHealth } from "../process/dependency-health.js";
import { silentLogger } from "../logger.js";
import { runDeliveryLoop, type DeliveryLoop } from "./delivery-loop.js";
import { DeadLetters } from "./dead-letters.js";
import { FlagsGate } from "./flags-gate.js";
import { settingsOf, type HarnessOptions } from "./harness-options.js";
import { drain, type Shutdown } from "./shutdown.js";
import { TurnDispatch } from "./turn-dispatch.js";
import { TurnSlots } from "./turn-slots.js";
import { TurnTally, type HarnessCounters } from "./turn-tally.js";

export type { HarnessOptions } from "./harness-options.js";

/** The consumer group every harness reads its stream with. */
export const HARNESS_GROUP = "harness";

export interface HarnessStats extends HarnessCounters {
  inFlight: number;
  /** True while the flags keep this harness from taking new work. */
  paused: boolean;
}

export interface Harness {
  /** The logical stream consumed (`role:NAME` or `team:NAME`). */
  readonly stream: string;
  readonly consumer: string;
  /** Runs until stopped; resolves once in-flight turns finished or were abandoned. */
  start(): Promise<void>;
  /** Stops gracefully; resolves when `start()` has. Idempotent. */
  close(): Promise<void>;
  readonly stats: HarnessStats;
}

export function createHarness(options: HarnessOptions): Harness {
  const settings = settingsOf(options);
  const { source, stream, consumer } = settings;
  const bus = options.bus;
  const logger = (options.logger ?? silentLogger).child({ component: "harness", stream, consumer });
  const health = options.health ?? new DependencyHealth({ logger });
  const group = HARNESS_GROUP;
  // Aborted on stop: wakes the delivery loop out of a blocking read, a back-off sleep or a wait for a free slot.
  const stopController = new AbortController();
  const gate = new FlagsGate(options.flags, settings.queueKind, source.id, settings.blockMs, logger);
  const slots = new TurnSlots(settings.concurrency, stopController.signal);
  const tally = new TurnTally(options.metrics, stream);
  const deadLetters = new DeadLetters(bus, stream, group, tally, logger);
  const turns = new TurnDispatch(
    {
      bus,
      stream,
      group,
      consumer,
      source,
      signer: options.signer,
      handler: options.handler,
      logger,
      maxPayloadBytes: settings.maxPayloadBytes,
      heartbeatMs: settings.heartbeatMs,
      resultReader: options.resultReader,
      ...(options.replies ? { replies: options.replies } : {}),
      now: () => Date.now(),
      routed: gate.routed,
      ...(options.turnCheck ? { turnCheck: options.turnCheck } : {}),
      health,
    },
    { bus, stream, health, logger },
    slots,
    tally,
    deadLetters,
  );
  const loop: DeliveryLoop = { bus, stream, group, consumer, reclaimIdleMs: settings.reclaimIdleMs, stop: stopController.signal, slots, gate, turns, tally, health, logger };
  const shutdown: Shutdown = { slots, deadLetters, tally, shutdownGraceMs: settings.shutdownGraceMs, logger };
  let running: Promise<void> | undefined;

  async function run(): Promise<void> {
    if (!stopController.signal.aborted) {
      await bus.ensureGroup(stream, group);
      logger.info({ concurrency: settings.concurrency }, "harness started");
      await runDeliveryLoop(loop);
    }
    await drain(shutdown);
    options.signal?.removeEventListener("abort", onAbort);
    logger.info({ ...tally.counters }, "harness stopped");
  }

  function stop(): void {
    if (stopController.signal.aborted) return;
    stopController.abort();
    slots.wake();
  }

  function onAbort(): void {
    stop();
  }

  if (options.signal?.aborted) stop();
  else options.signal?.addEventListener("abort", onAbort, { once: true });

  return {
    stream,
    consumer,
    start() {
      running ??= run();
      return running;
    },
    async close() {
      stop();
      // Closing a harness that never started has nothing to drain.
      if (running) await running.catch(() => {});
      else options.signal?.removeEventListener("abort", onAbort);
    },
    get stats(): HarnessStats {
      return { inFlight: slots.inFlight, ...tally.counters, paused: gate.paused };
    },
  };
}

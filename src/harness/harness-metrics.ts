/**
 * What a harness records per turn in Prometheus (README, Metrics): turns by outcome — a failure that will not be
 * retried counted apart as `non_retryable` — their duration, the turns in flight, how old an envelope was when
 * first read (queueing before any worker took it), and heartbeats sent. Kept out of harness.ts and turn.ts so
 * those only call a small recorder.
 */
import type { BusEntry } from "../bus/bus.js";
import type { Metrics } from "../metrics/metrics.js";
import type { TurnObserver, TurnOutcome } from "./turn.js";

export type HarnessMetrics = Pick<Metrics, "harnessTurns" | "reclaims" | "harnessTurnSeconds" | "harnessInFlight" | "harnessReadLag" | "harnessHeartbeats">;

/** `TurnOutcome` plus `non_retryable`: a failed turn whose error fails the step without a retry. */
export type TurnOutcomeLabel = TurnOutcome | "non_retryable";

export interface TurnRecording {
  observer: TurnObserver;
  /** The turn settled (or was abandoned): counts it, times it, and takes it out of the in-flight gauge. */
  ended(outcome: TurnOutcome): void;
}

export interface HarnessRecorder {
  /** A turn starts for `entry`; `redelivered` entries (reclaims) are not counted in the read lag. */
  started(entry: BusEntry, redelivered: boolean): TurnRecording;
  reclaimed(count: number): void;
}

export function createHarnessRecorder(metrics: Partial<HarnessMetrics> | undefined, stream: string, now: () => number = Date.now): HarnessRecorder {
  const labels = { stream };
  // Present from the start at 0, so "no harness running turns" is a sample rather than a missing series.
  metrics?.harnessInFlight?.set(labels, 0);
  return {
    started(entry, redelivered) {
      const startedAt = now();
      if (!redelivered && metrics?.harnessReadLag) {
        const createdAt = Number(entry.envelope.createdAtMs);
        if (createdAt > 0) metrics.harnessReadLag.observe(labels, Math.max(0, startedAt - createdAt) / 1000);
      }
      metrics?.harnessInFlight?.inc(labels);
      let retryable = true;
      let ended = false;
      return {
        observer: {
          heartbeatSent: () => metrics?.harnessHeartbeats?.inc(labels),
          handlerFailed: (canRetry) => {
            retryable = canRetry;
          },
        },
        ended(outcome) {
          if (ended) return;
          ended = true;
          metrics?.harnessInFlight?.dec(labels);
          const label: TurnOutcomeLabel = outcome === "failed" && !retryable ? "non_retryable" : outcome;
          metrics?.harnessTurns?.inc({ stream, outcome: label });
          metrics?.harnessTurnSeconds?.observe({ stream, outcome: label }, Math.max(0, now() - startedAt) / 1000);
        },
      };
    },
    reclaimed(count) {
      metrics?.reclaims?.inc(labels, count);
    },
  };
}

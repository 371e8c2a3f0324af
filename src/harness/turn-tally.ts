/**
 * What a harness counts of its turns: the counters `stats` shows and the harness stops with, and the metrics
 * recording of each turn from its start to its outcome (harness-metrics.ts), kept together so a turn is counted in
 * both or neither.
 */
import type { BusEntry } from "../bus/bus.js";
import { createHarnessRecorder, type HarnessMetrics, type HarnessRecorder, type TurnRecording } from "./harness-metrics.js";
import type { TurnObserver, TurnOutcome } from "./turn.js";

/** `HarnessStats` without what is read live (in flight, paused). */
export interface HarnessCounters {
  completed: number;
  failed: number;
  delegated: number;
  /** Turns whose outcome could not be published; their entries stay pending. */
  unsent: number;
  /** Reclaimed entries acknowledged without running: their turn had already stood down (see `turnCheck`). */
  stale: number;
  /** Entries acknowledged without running: another entry carried the same envelope and took it first. */
  duplicate: number;
  abandoned: number;
  reclaimed: number;
  deadLettered: number;
}

export class TurnTally {
  readonly counters: HarnessCounters = { completed: 0, failed: 0, delegated: 0, unsent: 0, stale: 0, duplicate: 0, abandoned: 0, reclaimed: 0, deadLettered: 0 };
  private readonly recorder: HarnessRecorder;
  private readonly recordings = new Map<string, TurnRecording>();

  constructor(metrics: HarnessMetrics | undefined, stream: string) {
    this.recorder = createHarnessRecorder(metrics, stream);
  }

  /** A turn starts for `entry`; what it returns is the turn's observer. */
  started(entry: BusEntry, redelivered: boolean): TurnObserver {
    const recording = this.recorder.started(entry, redelivered);
    this.recordings.set(entry.id, recording);
    return recording.observer;
  }

  /** The turn of `entryId` ended with `outcome` (settled, or abandoned at shutdown). */
  count(entryId: string, outcome: TurnOutcome): void {
    this.counters[outcome] += 1;
    this.recordings.get(entryId)?.ended(outcome);
    this.recordings.delete(entryId);
  }

  /** A reclaim returned `entries`, of which `fresh` were not running here already. */
  reclaimed(fresh: number, entries: number): void {
    this.counters.reclaimed += fresh;
    this.recorder.reclaimed(entries);
  }

  deadLettered(): void {
    this.counters.deadLettered += 1;
  }
}

/**
 * The harness's concurrency slots: the turns running now, by entry id, at most `concurrency` of them. The delivery
 * loop asks for as many entries as there are free slots and, when none is, waits for a turn to end (or the stop).
 */
import type { RunningTurn } from "./turn.js";

export class TurnSlots {
  private readonly running = new Map<string, RunningTurn>();
  // One waiter at most: only the delivery loop waits for a slot.
  private slotFreed: (() => void) | undefined;

  constructor(
    private readonly concurrency: number,
    private readonly stop: AbortSignal,
  ) {}

  get inFlight(): number {
    return this.running.size;
  }

  free(): number {
    return this.concurrency - this.running.size;
  }

  /** Resolves at once with a slot free or the harness stopped; otherwise at the next `wake()`. */
  waitForFree(): Promise<void> {
    if (this.free() > 0 || this.stop.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      this.slotFreed = resolve;
    });
  }

  /** Lets the waiting delivery loop look again (a turn ended, or the harness stops). */
  wake(): void {
    const wake = this.slotFreed;
    this.slotFreed = undefined;
    wake?.();
  }

  /** Our own turn whose touch lapsed can come back from a reclaim; it must never run twice at once. */
  holds(entryId: string): boolean {
    return this.running.has(entryId);
  }

  take(entryId: string, turn: RunningTurn): void {
    this.running.set(entryId, turn);
  }

  release(entryId: string): void {
    this.running.delete(entryId);
  }

  turns(): IterableIterator<RunningTurn> {
    return this.running.values();
  }

  clear(): void {
    this.running.clear();
  }
}

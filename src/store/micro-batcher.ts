/**
 * Group commit for independent requests: callers `submit` one item each and get their own answer, while the items
 * that arrive during a running batch are collected and handed to `run` together as the next batch. An idle batcher
 * starts a batch at once, so a lone request waits for nothing; under load the batch grows to what arrived during
 * one round trip, which is what turns N transactions (and N WAL flushes) into one.
 *
 * When a batch fails, each of its items is run again alone (when `isolate` allows it), so one bad item fails only
 * its own caller — the others still get their answer.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";

export interface MicroBatcherOptions<I, O> {
  /** Runs a batch; must answer one output per item, in order. */
  run: (items: I[]) => Promise<O[]>;
  /** Largest batch. @defaultValue 200 */
  maxBatch?: number;
  /** Batches running at once (reads can overlap; transactions that lock rows should not). @defaultValue 1 */
  maxInFlight?: number;
  /**
   * Whether a failed batch of several items is re-run item by item. Connection-level failures would only fail
   * again N times, so callers can refuse those. @defaultValue always
   */
  isolate?: (error: unknown) => boolean;
}

interface Pending<I, O> {
  item: I;
  resolve: (output: O) => void;
  reject: (error: unknown) => void;
}

export class MicroBatcher<I, O> {
  private queue: Array<Pending<I, O>> = [];
  private inFlight = 0;
  private readonly maxBatch: number;
  private readonly maxInFlight: number;

  constructor(private readonly options: MicroBatcherOptions<I, O>) {
    this.maxBatch = Math.max(1, options.maxBatch ?? 200);
    this.maxInFlight = Math.max(1, options.maxInFlight ?? 1);
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.pump();
    });
  }

  /** Items waiting for a batch (not counting those running). */
  get waiting(): number {
    return this.queue.length;
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight++;
      void this.runBatch(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async runBatch(batch: Array<Pending<I, O>>): Promise<void> {
    try {
      settle(batch, await this.runChecked(batch.map((p) => p.item)));
    } catch (error) {
      if (batch.length === 1 || !(this.options.isolate?.(error) ?? true)) {
        for (const pending of batch) pending.reject(error);
        return;
      }
      // One by one, in order: the item that broke the batch fails alone.
      for (const pending of batch) {
        try {
          settle([pending], await this.runChecked([pending.item]));
        } catch (single) {
          pending.reject(single);
        }
      }
    }
  }

  private async runChecked(items: I[]): Promise<O[]> {
    const outputs = await this.options.run(items);
    if (outputs.length !== items.length) throw new SwitchyardError(ErrorCode.Internal, `a batch of ${items.length} answered ${outputs.length} outputs`);
    return outputs;
  }
}

function settle<I, O>(batch: Array<Pending<I, O>>, outputs: O[]): void {
  batch.forEach((pending, i) => pending.resolve(outputs[i]!));
}

/**
 * Re-reads a small table every `pollMs` for a process's live settings (flags, dispatch limits): the caller's
 * `refresh` swaps its snapshot; a failed read keeps the last good one and is logged once per outage (an unreachable
 * database is the process's outage, logged once by its DependencyHealth), and said again when reading works.
 */
import type { DependencyHealth } from "./dependency-health.js";
import type { Logger } from "../logger.js";
import { sleep } from "../sleep.js";

export interface TablePollerOptions {
  /** What is read, for the log lines ("flags", "limits"). */
  what: string;
  refresh: () => Promise<void>;
  pollMs: number;
  logger: Logger;
  health?: DependencyHealth;
}

export class TablePoller {
  private poller: { controller: AbortController; done: Promise<void> } | undefined;
  private failing = false;

  constructor(private readonly options: TablePollerOptions) {}

  /** Re-reads every `pollMs` until `stop()` or the signal. Idempotent. */
  start(signal?: AbortSignal): void {
    if (this.poller || signal?.aborted) return;
    const controller = new AbortController();
    signal?.addEventListener("abort", () => controller.abort(), { once: true });
    this.poller = { controller, done: this.poll(controller.signal) };
  }

  /** Stops the poller; resolves once it has. */
  async stop(): Promise<void> {
    const poller = this.poller;
    if (!poller) return;
    poller.controller.abort();
    await poller.done;
    this.poller = undefined;
  }

  private async poll(signal: AbortSignal): Promise<void> {
    const { what, logger } = this.options;
    while (!signal.aborted) {
      // Unref'd: a forgotten poller must not keep a finished process alive.
      await sleep(this.options.pollMs, signal, { unref: true });
      if (signal.aborted) break;
      try {
        await this.options.refresh();
        if (this.failing) logger.info(`reading ${what} works again`);
        this.failing = false;
      } catch (error) {
        if (this.options.health?.absorb(error)) logger.debug({ err: error }, `reading ${what} failed; keeping the last values read`);
        else if (!this.failing) logger.warn({ err: error }, `reading ${what} failed; keeping the last values read`);
        this.failing = true;
      }
    }
  }
}

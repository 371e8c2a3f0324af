/**
 * A job the coordinator runs every so often (sweep, trim, checkpoints, the A2A sender and sweep) until stopped.
 * A run that fails because a dependency is unreachable is recorded as an outage and the next run waits longer
 * (up to 5 s), so the job does not hammer a dependency that is restarting; any other failure is logged.
 */
import { outageBackoffMs, type DependencyHealth } from "../process/dependency-health.js";
import type { Logger } from "../logger.js";
import { sleep } from "../sleep.js";

export interface PeriodicJobOptions {
  name: string;
  intervalMs: number;
  run: () => Promise<unknown>;
  /** Run once at start instead of after the first interval. */
  immediately?: boolean;
  signal: AbortSignal;
  health: DependencyHealth;
  logger: Logger;
}

export async function runPeriodically(options: PeriodicJobOptions): Promise<void> {
  const { name, intervalMs, signal, health, logger } = options;
  let first = true;
  let failures = 0;
  while (!signal.aborted) {
    const waitMs = failures > 0 ? Math.max(intervalMs, outageBackoffMs(failures)) : intervalMs;
    if (!(first && options.immediately)) await sleep(waitMs, signal);
    first = false;
    if (signal.aborted) break;
    try {
      await options.run();
      failures = 0;
    } catch (error) {
      if (signal.aborted) break;
      if (health.absorb(error)) {
        failures += 1;
        logger.debug({ err: error, loop: name }, "periodic job failed in an outage; backing off");
      } else {
        failures = 0;
        logger.error({ err: error, loop: name }, "periodic job failed");
      }
    }
  }
}

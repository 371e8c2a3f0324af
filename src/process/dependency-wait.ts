/**
 * Start-up that waits for its dependencies. A long-running process (coordinator, harness, gateway, `start all`)
 * started while Postgres or Redis is down — a restart under a supervisor during a database failover, a whole
 * stack coming up in any order — waits for them instead of exiting, as it would once running. Only
 * unreachability is waited out: a wrong schema version, an evicting Redis or bad credentials still fail at once.
 */
import { SwitchyardError } from "../errors.js";
import { sleep } from "../sleep.js";
import { unreachableDependencyOf } from "./dependency-health.js";
import type { Logger } from "../logger.js";

export interface DependencyWaitOptions {
  logger: Logger;
  /** Aborting gives up: the last error is thrown. */
  signal?: AbortSignal;
  /** @defaultValue 5 s; the first retry comes after 250 ms, doubling up to this */
  maxDelayMs?: number;
  /** While waiting, the warning is repeated this often so a long wait stays visible. @defaultValue 30 s */
  remindEveryMs?: number;
}

/** Runs `attempt` until it succeeds or fails for a reason other than an unreachable Postgres or Redis. */
export async function untilDependenciesAnswer<T>(attempt: () => Promise<T>, options: DependencyWaitOptions): Promise<T> {
  const { logger } = options;
  const maxDelayMs = options.maxDelayMs ?? 5_000;
  const remindEveryMs = options.remindEveryMs ?? 30_000;
  let delayMs = 250;
  let waitingSince: number | undefined;
  let warnedAt = 0;
  for (;;) {
    try {
      const value = await attempt();
      if (waitingSince !== undefined) logger.info({ waitedMs: Date.now() - waitingSince }, "dependencies answer again; starting");
      return value;
    } catch (error) {
      const dependency = unreachableDependencyOf(error);
      if (dependency === undefined || options.signal?.aborted) throw error;
      const now = Date.now();
      waitingSince ??= now;
      if (now - warnedAt >= remindEveryMs) {
        warnedAt = now;
        // A named error already says which address and which variable ("Redis at … is not answering (REDIS_URL)").
        const named = error instanceof SwitchyardError && error.details.dependency === dependency ? `: ${error.message}` : "";
        logger.warn({ dependency, err: error, waitingMs: now - waitingSince }, `${dependency} is unreachable; waiting for it before starting${named}`);
      }
      await sleep(delayMs, options.signal);
      delayMs = Math.min(delayMs * 2, maxDelayMs);
    }
  }
}


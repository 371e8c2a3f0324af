/**
 * FOREIGN over A2A, assembled: the post-commit sender, the reconciliation sweep and the callback route's
 * dependencies, sharing one set of per-agent channels (guarded fetch, card cache, client) and one breaker registry. The runtime builds it; coordinators run `jobs`, the gateway mounts the route.
 */
import type { Config } from "../config.js";
import type { Engine } from "../coordinator/engine.js";
import type { OutboxRow } from "../coordinator/outbox.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Pool } from "../store/db.js";
import { AgentChannels } from "./agent-channels.js";
import type { A2ACallbackDeps } from "./callback-route.js";
import { BreakerRegistry } from "./egress/index.js";
import { TokenBuckets } from "./rate-limit.js";
import { ForeignSender } from "./sender.js";
import { ForeignSweep } from "./sweep.js";

/** A periodic job a coordinator runs beside its own loops. */
export interface BackgroundJob {
  name: string;
  intervalMs: number;
  run: (now: number) => Promise<unknown>;
}

export interface A2AForeign {
  sender: ForeignSender;
  sweep: ForeignSweep;
  breakers: BreakerRegistry;
  channels: AgentChannels;
  /** What `handleA2ACallback` needs. */
  callback: A2ACallbackDeps;
  /** The sender (every coordinator sweep interval, at most 1 s) and the reconciliation sweep (`foreign.sweepIntervalMs`). */
  jobs: BackgroundJob[];
  close(): void;
}

export interface A2AForeignOptions {
  config: Config;
  pool: Pool;
  engine: Engine;
  publisher?: { publish(rows: readonly OutboxRow[]): Promise<void> };
  logger?: Logger;
  /** Told on every breaker transition (metrics). */
  onBreakerChange?: (tenant: string, agent: string, state: "closed" | "open" | "half_open") => void;
  clock?: () => number;
}

/**
 * The engine is built with the dispatcher (`createA2ADispatcher({ onBridge: () => foreign.sender.kick() })`) first;
 * this builds everything that needs the engine.
 */
export function createA2AForeign(options: A2AForeignOptions): A2AForeign {
  const { config } = options;
  const abort = new AbortController();
  const breakers = new BreakerRegistry({
    errorThresholdPercentage: config.foreign.breakerErrorPercent,
    volumeThreshold: config.foreign.breakerVolume,
    resetTimeout: config.foreign.breakerResetMs,
    ...(options.onBreakerChange ? { onStateChange: options.onBreakerChange } : {}),
  });
  const channels = new AgentChannels({ foreign: config.foreign, signal: abort.signal });
  const deps = {
    pool: options.pool,
    engine: options.engine,
    ...(options.publisher ? { publisher: options.publisher } : {}),
    logger: options.logger ?? silentLogger,
  };
  const sender = new ForeignSender({ ...deps, channels, breakers, foreign: config.foreign, publicUrl: config.gateway.publicUrl, ...(options.clock ? { clock: options.clock } : {}) });
  const sweep = new ForeignSweep({ ...deps, channels, breakers, foreign: config.foreign });
  const callback: A2ACallbackDeps = {
    ...deps,
    maxBodyBytes: config.foreign.callbackMaxBytes,
    limiter: new TokenBuckets({ ratePerSec: config.foreign.callbackRatePerSec }),
    ...(options.clock ? { clock: options.clock } : {}),
  };
  return {
    sender,
    sweep,
    breakers,
    channels,
    callback,
    jobs: [
      { name: "a2a-send", intervalMs: Math.min(config.coordinator.sweepIntervalMs, 1_000), run: () => sender.run() },
      { name: "a2a-sweep", intervalMs: config.foreign.sweepIntervalMs, run: () => sweep.run() },
    ],
    close() {
      abort.abort();
      breakers.shutdown();
    },
  };
}

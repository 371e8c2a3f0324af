/**
 * FOREIGN (A2A agents and MCP tools), assembled: the two transports (A2ATransport, McpTransport) picked per agent
 * by `ForeignTransports`, and around them the transport-blind post-commit sender, the poller (GetTask for polled A2A
 * bridges and pushed ones whose end must be confirmed), the reconciliation sweep and the callback route's
 * dependencies (A2A pushes) — all sharing one set of per-agent channels (guarded fetch, A2A card cache and client)
 * and one breaker registry. The runtime builds it; coordinators run `jobs`, the gateway mounts the route. (The file
 * keeps its historical name: FOREIGN began as A2A only.)
 */
import type { BusAuth } from "../bus/auth/bus-auth.js";
import { GATEWAY_SENDER } from "../bus/auth/bus-keys.js";
import type { Config } from "../config/index.js";
import type { DependencyHealth } from "../process/dependency-health.js";
import type { OutboxRow } from "../store/engine/engine-store.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Pool } from "../store/db.js";
import type { ForeignAgentStore } from "../store/foreign/foreign-agent-store.js";
import type { BridgeStore } from "../store/bridges/bridge-store.js";
import type { LinkKeyStore } from "../store/approvals/approval-store.js";
import { AgentChannels } from "./agent-channels.js";
import type { CoordinatorFlags } from "../flags/flag-types.js";
import { CallbackIntake } from "./callback-intake.js";
import type { A2ACallbackDeps } from "./callback-route.js";
import { BreakerRegistry } from "./egress/index.js";
import { TokenBuckets } from "./rate-limit.js";
import { ForeignSender } from "./sender.js";
import type { LimitSource } from "../core/limits.js";
import { ForeignSweep } from "./sweep.js";
import { ForeignPoller } from "./poller.js";
import { ForeignTransports } from "./transport.js";
import { A2ATransport } from "./a2a/a2a-transport.js";
import { McpTransport } from "./mcp/mcp-transport.js";

/** A periodic job a coordinator runs beside its own loops. */
export interface BackgroundJob {
  name: string;
  intervalMs: number;
  run: (now: number) => Promise<unknown>;
}

export interface A2AForeign {
  sender: ForeignSender;
  sweep: ForeignSweep;
  /** GetTask for polled bridges and for pushed ones whose end must be confirmed (poller.ts). */
  poller: ForeignPoller;
  breakers: BreakerRegistry;
  channels: AgentChannels;
  /** The transports by kind (A2A, MCP), over those channels. */
  transports: ForeignTransports;
  /** What `handleA2ACallback` needs. */
  callback: A2ACallbackDeps;
  /** The sender (every coordinator sweep interval, at most 1 s), the poller and the reconciliation sweep (`foreign.sweepIntervalMs`). */
  jobs: BackgroundJob[];
  close(): Promise<void>;
}

export interface A2AForeignOptions {
  config: Config;
  pool: Pool;
  /** The bridges port (runtime.stores.bridges): every part here reads and writes bridges through it. */
  bridges: BridgeStore;
  /** The foreign agent registry's port (runtime.stores.foreignAgents): the sender, poller and sweep look agents up through it. */
  agents: ForeignAgentStore;
  /** The tenants' link keys (runtime.stores.linkKeys): the sender signs each bridge's callback token with one. */
  linkKeys: Pick<LinkKeyStore, "get">;
  publisher?: { publish(rows: readonly OutboxRow[]): Promise<void> };
  logger?: Logger;
  /** Breaker states and sweep results are recorded here. */
  metrics?: Metrics;
  /** The live egress switch, checked again right before each send. */
  egress?: { egressEnabled(orgId: string): boolean };
  /** BUS_ENABLED / COORDINATOR_ENABLED: the sender and sweep pause with them. @defaultValue everything on */
  flags?: CoordinatorFlags;
  clock?: () => number;
  /** The process's dependency health (the sender's kicked runs report outages to it). */
  health?: DependencyHealth;
  /** Dispatch weights: each tenant's share of the sender's slots. @defaultValue every tenant weighs 1 */
  limits?: LimitSource;
  /** Signs the FOREIGN RESULTs as the gateway identity (its key is looked up on first use). */
  busAuth: BusAuth;
}

/**
 * The engine is built with the dispatcher (`createA2ADispatcher({ onBridge: () => foreign.sender.kick() })`); this
 * builds what runs beside it. Resolved bridges resume their steps through the coordinator's inbox (resume.ts), so
 * nothing here needs the engine.
 */
export function createA2AForeign(options: A2AForeignOptions): A2AForeign {
  const { config } = options;
  const abort = new AbortController();
  const breakers = new BreakerRegistry({
    errorThresholdPercentage: config.foreign.breakerErrorPercent,
    volumeThreshold: config.foreign.breakerVolume,
    resetTimeout: config.foreign.breakerResetMs,
    onStateChange: (tenant, agent, state) =>
      options.metrics?.foreignBreakerState.set({ tenant, agent }, state === "closed" ? 0 : state === "half_open" ? 1 : 2),
  });
  const channels = new AgentChannels({ foreign: config.foreign, signal: abort.signal, ...(options.logger ? { logger: options.logger } : {}) });
  const transports = new ForeignTransports([
    new A2ATransport(channels),
    new McpTransport(channels, { foreign: config.foreign, ...(options.clock ? { clock: options.clock } : {}) }),
  ]);
  const deps = {
    pool: options.pool,
    bridges: options.bridges,
    ...(options.publisher ? { publisher: options.publisher } : {}),
    maxPayloadBytes: config.bus.maxPayloadBytes,
    shardCount: config.shards.count,
    signer: options.busAuth.lazySigner(GATEWAY_SENDER),
    logger: options.logger ?? silentLogger,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
  };
  const sender = new ForeignSender({
    ...deps,
    agents: options.agents,
    linkKeys: options.linkKeys,
    transports,
    breakers,
    foreign: config.foreign,
    publicUrl: config.gateway.publicUrl,
    defaultStepTimeoutMs: config.coordinator.defaultStepTimeoutMs,
    ...(options.egress ? { egress: options.egress } : {}),
    ...(options.flags ? { flags: options.flags } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.health ? { health: options.health } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
  });
  const poller = new ForeignPoller({ ...deps, agents: options.agents, transports, breakers, foreign: config.foreign, ...(options.flags ? { flags: options.flags } : {}) });
  const sweep = new ForeignSweep({ ...deps, agents: options.agents, transports, breakers, foreign: config.foreign, ...(options.flags ? { flags: options.flags } : {}) });
  const callback: A2ACallbackDeps = {
    intake: new CallbackIntake({ ...deps, ...(options.metrics ? { metrics: options.metrics } : {}) }),
    logger: deps.logger,
    maxBodyBytes: config.foreign.callbackMaxBytes,
    limiter: new TokenBuckets({ ratePerSec: config.foreign.callbackRatePerSec }),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.health ? { health: options.health } : {}),
  };
  return {
    sender,
    sweep,
    poller,
    breakers,
    channels,
    transports,
    callback,
    jobs: [
      { name: "a2a-send", intervalMs: Math.min(config.coordinator.sweepIntervalMs, 1_000), run: () => sender.pump() },
      // Due polls are found every pollBaseMs (at most 250 ms), so a GetTask due now waits at most that long.
      { name: "a2a-poll", intervalMs: Math.min(config.foreign.pollBaseMs, 250), run: () => poller.run(abort.signal) },
      {
        name: "a2a-sweep",
        intervalMs: config.foreign.sweepIntervalMs,
        run: async () => {
          const report = await sweep.run();
          for (const result of ["polled", "resumed", "timedOut"] as const) {
            if (report[result] > 0) options.metrics?.a2aSweep.inc({ result }, report[result]);
          }
          return report;
        },
      },
    ],
    async close() {
      // The calls in flight first (they still use the channels), then everything else.
      await sender.close();
      abort.abort();
      breakers.shutdown();
    },
  };
}

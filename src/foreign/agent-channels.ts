/**
 * One outbound channel per (tenant, agent, allowlist entry): a guarded fetch that may reach only that agent's
 * `allow_host` (plus the operator's CIDRs), the Agent Card cache and the A2A client built on it. Every call to a
 * foreign agent — card, send, get, cancel — goes through its channel, so the egress guard sees all of them.
 * A changed registry entry (another allow_host) gets a fresh channel; old ones are dropped least-recently-used.
 */
import type { ForeignConfig } from "../config/index.js";
import type { Logger } from "../logger.js";
import { AgentCardCache } from "./a2a/agent-card.js";
import { createA2AClient, type A2AClient } from "./a2a/client.js";
import { createGuardedFetch } from "./egress/index.js";
import type { ForeignAgentRecord } from "./registry.js";
import { createEnvSecretStore, withCredential, type SecretStore } from "./secret-store.js";

export interface AgentChannel {
  fetch: typeof globalThis.fetch;
  /**
   * For a call that lasts as long as the work (an MCP tool call): the same guard (allowlist, addresses, credential,
   * size cap) with the total deadline the caller needs — the step's due time, which may be long after
   * `totalTimeoutMs` — and `text/event-stream` answers streamed as they arrive, so progress notifications are seen
   * while the tool runs. Built per call (cheap: no sockets are pooled). `until`, when given, is read again when the
   * total deadline comes and may push it later (an MCP call whose tool reports progress; egress/call-deadline.ts).
   */
  fetchFor(totalTimeoutMs: number, until?: () => number): typeof globalThis.fetch;
  cards: AgentCardCache;
  client: A2AClient;
  /**
   * The A2A client for SendMessage: a blocking agent holds its answer while it works, so the call may last until
   * the step's due time (`deadlineMs`), never less than `totalTimeoutMs`. Built per call, like `fetchFor`.
   */
  sendClient(deadlineMs: number): A2AClient;
}

export interface AgentChannelsOptions {
  foreign: ForeignConfig;
  /** Aborts every call (shutdown). */
  signal?: AbortSignal;
  /** Channels kept at most. @defaultValue 1000 */
  maxChannels?: number;
  /** Resolves `credential_ref`s. @defaultValue the environment adapter over `foreign.secrets` */
  secrets?: SecretStore;
  /** Where each agent's client logs (e.g. that the agent answers with `"id": null`). */
  logger?: Logger;
  /** Replaces the guarded fetch factory (tests of the guard itself never need this; kept for benchmarks). */
  makeFetch?: (allowHost: string) => typeof globalThis.fetch;
}

export class AgentChannels {
  private readonly channels = new Map<string, AgentChannel>();

  constructor(private readonly options: AgentChannelsOptions) {}

  get(agent: Pick<ForeignAgentRecord, "orgId" | "agentKey" | "allowHost" | "credentialRef">): AgentChannel {
    const key = `${agent.orgId}\u0000${agent.agentKey}\u0000${agent.allowHost}\u0000${agent.credentialRef ?? ""}`;
    const existing = this.channels.get(key);
    if (existing) {
      this.channels.delete(key);
      this.channels.set(key, existing);
      return existing;
    }
    const f = this.options.foreign;
    const guardedFor = (totalTimeoutMs: number, streamEventStreams: boolean, totalUntil?: () => number) =>
      this.options.makeFetch?.(agent.allowHost) ??
      createGuardedFetch({
        allowHosts: [agent.allowHost],
        allowedNetworks: f.allowedNetworks,
        connectTimeoutMs: f.connectTimeoutMs,
        totalTimeoutMs: Math.max(1, Math.ceil(totalTimeoutMs)),
        maxResponseBytes: f.maxResponseBytes,
        streamEventStreams,
        ...(totalUntil ? { totalUntil } : {}),
        ...(this.options.signal ? { signal: this.options.signal } : {}),
      });
    // Resolved per channel, so a missing secret fails this agent's calls closed and nothing else.
    const secrets = this.options.secrets ?? createEnvSecretStore(f.secrets);
    const credential = agent.credentialRef ? secrets.resolve(agent.orgId, agent.credentialRef) : undefined;
    const withSecret = (guarded: typeof globalThis.fetch) => (credential === undefined ? guarded : withCredential(guarded, credential));
    const fetchImpl = withSecret(guardedFor(f.totalTimeoutMs, false));
    const channel: AgentChannel = {
      fetch: fetchImpl,
      fetchFor: (totalTimeoutMs, until) => withSecret(guardedFor(totalTimeoutMs, true, until)),
      cards: new AgentCardCache({ fetch: fetchImpl, ttlMs: f.cardTtlMs, timeoutMs: f.totalTimeoutMs }),
      client: createA2AClient({
        fetch: fetchImpl,
        timeoutMs: f.totalTimeoutMs,
        ...(this.options.logger ? { logger: this.options.logger.child({ component: "a2a-client", orgId: agent.orgId, agent: agent.agentKey }) } : {}),
      }),
      sendClient: (deadlineMs) => {
        const ms = Math.max(f.totalTimeoutMs, Math.ceil(deadlineMs - Date.now()));
        return ms === f.totalTimeoutMs
          ? channel.client
          : createA2AClient({
              fetch: withSecret(guardedFor(ms, false)),
              timeoutMs: ms,
              ...(this.options.logger ? { logger: this.options.logger.child({ component: "a2a-client", orgId: agent.orgId, agent: agent.agentKey }) } : {}),
            });
      },
    };
    this.channels.set(key, channel);
    while (this.channels.size > (this.options.maxChannels ?? 1000)) this.channels.delete(this.channels.keys().next().value!);
    return channel;
  }
}

/**
 * A call that IS the work (an MCP tool call) heartbeats its step while it runs, as a worker does: the tool's progress
 * notifications become CONTROL heartbeats for the bridge's step attempt, and the coordinator moves the step's due
 * time to now + the step's timeout (decide.ts onHeartbeat). So a tool that keeps reporting progress is not timed
 * out however long it runs, and one that falls silent times out one step-timeout after its last sign of life.
 *
 * The heartbeat is signed as the gateway with the agent as its FOREIGN source, like the bridge's RESULT
 * (foreign-result.ts): the coordinator accepts a gateway heartbeat only for a `foreign:<agent>` step of that agent
 * (sender-guard.ts), and one for an attempt no longer in flight changes nothing. It goes through the outbox — the
 * row is written only while the bridge is open and its step attempt still in flight, in the same statement that
 * moves the bridge's `deadline_ms` on — then published at once with the sender's publisher (the outbox relay
 * publishes what a crash left). Heartbeats are not deduplicated by the coordinator; ids are `mcp:<bridge>:hb:<n>`.
 *
 * Throttled: at most one per second per call — or per half the step's timeout when that is shorter, since with a
 * step timeout under 2 s a heartbeat a second could let the due time pass between two of them, and progress would
 * no longer keep the step alive — and none once the call has ended. The first progress beats at once; a beat while
 * the previous one is still being written is dropped (the next progress carries it).
 */
import { inboxFor } from "../bus/shards.js";
import { COORDINATOR_ENDPOINT, EndpointKind, EnvelopeKind, createEnvelope, jsonPayload } from "../bus/codec.js";
import type { EnvelopeSigner } from "../bus/auth/bus-auth.js";
import type { OutboxRow } from "../store/engine/engine-store.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Pool } from "../store/db.js";
import type { BridgeRecord, BridgeStore } from "../store/bridges/bridge-store.js";
import type { OutboxEnvelope } from "./foreign-result.js";

/** At most one heartbeat per call per this long: progress may come every few ms, the step only needs to know. */
export const HEARTBEAT_MIN_INTERVAL_MS = 1_000;

/** The throttle for a step timeout: a second, or half the timeout when that is shorter (see the module comment). */
export function heartbeatIntervalMs(stepTimeoutMs: number, maxIntervalMs = HEARTBEAT_MIN_INTERVAL_MS): number {
  return Math.max(1, Math.min(maxIntervalMs, Math.floor(stepTimeoutMs / 2)));
}

export interface CallHeartbeatDeps {
  pool: Pool;
  bridges: Pick<BridgeStore, "heartbeat">;
  /** Publishes the written heartbeat now; without it the outbox relay does (within its stale interval). */
  publisher?: { publish(rows: readonly OutboxRow[]): Promise<void> };
  /** The gateway identity (`runtime.busAuth.lazySigner(GATEWAY_SENDER)`), as for the bridge's RESULT. */
  signer: EnvelopeSigner;
  /** The deployment's shard count: heartbeats go straight to the tenant's shard inbox (else the shared one). */
  shardCount?: number;
  logger?: Logger;
  clock?: () => number;
  /** The throttle's upper bound (see `heartbeatIntervalMs`). @defaultValue HEARTBEAT_MIN_INTERVAL_MS */
  minIntervalMs?: number;
  /** A heartbeat found the bridge resolved or its attempt over: the call should stop (the sender aborts it). */
  onAttemptOver?: () => void;
}

type HeartbeatBridge = Pick<BridgeRecord, "id" | "orgId" | "taskId" | "stepId" | "attempt" | "agentKey">;

export function foreignHeartbeatId(bridgeId: string, n: number): string {
  return `mcp:${bridgeId}:hb:${n}`;
}

/** The `n`th heartbeat of the bridge's call, signed as the gateway speaking for the agent. */
export function foreignHeartbeatEnvelope(bridge: HeartbeatBridge, n: number, signer: EnvelopeSigner, nowMs: number, shardCount?: number): OutboxEnvelope {
  const envelopeId = foreignHeartbeatId(bridge.id, n);
  const bytes = signer.sign(
    createEnvelope({
      id: envelopeId,
      orgId: bridge.orgId,
      taskId: bridge.taskId,
      stepId: bridge.stepId,
      kind: EnvelopeKind.CONTROL,
      source: { kind: EndpointKind.FOREIGN, id: bridge.agentKey },
      destination: COORDINATOR_ENDPOINT,
      attempt: bridge.attempt,
      payload: jsonPayload({ type: "heartbeat" }),
      createdAtMs: BigInt(nowMs),
    }),
  );
  return { orgId: bridge.orgId, stream: inboxFor(bridge.orgId, shardCount), envelopeId, bytes };
}

/** The heartbeats of ONE call: `beat()` on each sign of life, `stop()` when the call has ended. */
export class CallHeartbeat {
  private readonly clock: () => number;
  private readonly logger: Logger;
  private lastAtMs = Number.NEGATIVE_INFINITY;
  private sent = 0;
  private writing: Promise<void> | undefined;
  private stopped = false;
  private readonly intervalMs: number;

  constructor(
    private readonly deps: CallHeartbeatDeps,
    private readonly bridge: HeartbeatBridge,
    /** How far each heartbeat moves the step's due time (the bridge's `deadline_ms` follows). */
    private readonly stepTimeoutMs: number,
  ) {
    this.clock = deps.clock ?? Date.now;
    this.logger = deps.logger ?? silentLogger;
    this.intervalMs = heartbeatIntervalMs(stepTimeoutMs, deps.minIntervalMs);
  }

  /** How many heartbeats were written (published or left to the relay). */
  get count(): number {
    return this.sent;
  }

  /** A sign of life: writes a heartbeat unless one went out within the interval, one is being written, or the call ended. */
  beat(): void {
    const now = this.clock();
    if (this.stopped || this.writing || now - this.lastAtMs < this.intervalMs) return;
    this.lastAtMs = now;
    this.writing = this.write(now)
      .catch((error: unknown) => {
        // A lost heartbeat only lets the step's due time come sooner; the next progress tries again.
        this.logger.warn({ err: error }, "foreign call heartbeat not written");
      })
      .finally(() => {
        this.writing = undefined;
      });
  }

  /** The call has ended: no heartbeat after this (one being written finishes; the coordinator ignores it if stale). */
  stop(): void {
    this.stopped = true;
  }

  private async write(now: number): Promise<void> {
    const n = this.sent + 1;
    const out = foreignHeartbeatEnvelope(this.bridge, n, this.deps.signer, now, this.deps.shardCount);
    const outboxId = await this.deps.bridges.heartbeat(this.deps.pool, this.bridge.id, out, Math.round(now + this.stepTimeoutMs));
    if (outboxId === undefined) {
      // The bridge resolved or its attempt is over: nothing to keep alive, and nothing waits for the call.
      this.stopped = true;
      this.deps.onAttemptOver?.();
      return;
    }
    this.sent = n;
    await this.deps.publisher?.publish([{ id: outboxId, stream: out.stream, bytes: out.bytes, createdAtMs: Date.now() }]);
  }
}

/**
 * What a harness is given (`HarnessOptions`) and what it settles them into once, at creation (`HarnessSettings`):
 * every bound checked, every default applied, so the parts that run (delivery loop, slots, shutdown) read plain
 * numbers and never an option.
 */
import type { EnvelopeSigner } from "../bus/auth/bus-auth.js";
import type { Bus } from "../bus/bus.js";
import { EndpointKind } from "../bus/codec.js";
import { consumerName } from "../bus/keys.js";
import type { DependencyHealth } from "../process/dependency-health.js";
import { parseDestination } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { HarnessFlags } from "../flags/flag-types.js";
import type { Logger } from "../logger.js";
import type { HarnessSource } from "./envelopes.js";
import type { HarnessMetrics } from "./harness-metrics.js";
import type { ResultReader } from "./result-reader.js";
import type { TurnCheck } from "./turn-check.js";
import type { HarnessReplies } from "./turn.js";
import type { AnyHandler } from "./types.js";

export interface HarnessOptions {
  bus: Bus;
  /** The role queue to consume (`role:NAME`); exactly one of `role` and `team`. */
  role?: string;
  /** The team queue to consume (`team:NAME`); exactly one of `role` and `team`. */
  team?: string;
  /** Any `Handler<Input, Output>`; the harness hands it `work.input` as the coordinator sent it. */
  handler: AnyHandler;
  /**
   * Signs what the harness publishes to the coordinator (RESULT, QUERY, heartbeat) as its queue's identity:
   * `runtime.busAuth.signer("role:NAME")`. The coordinator refuses anything unsigned or signed as another queue.
   */
  signer: EnvelopeSigner;
  /** Handlers running at once. @defaultValue 10 */
  concurrency?: number;
  /** Aborting it stops the harness gracefully, like `close()`. */
  signal?: AbortSignal;
  /** @defaultValue a silent logger */
  logger?: Logger;
  /** Cap on an outgoing payload's JSON (handler output, delegation query + state). */
  maxPayloadBytes: number;
  /** Entries idle this long are taken over from their (presumed dead) consumer; checked every half of it. */
  reclaimIdleMs: number;
  /** How often a running turn's entry is touched so it is not reclaimed. */
  heartbeatMs: number;
  /** How long in-flight turns may run on after a stop before they are abandoned. */
  shutdownGraceMs: number;
  /** Lets handlers read delegate results (`ctx.readResult`); without one that call fails FAILED_PRECONDITION. */
  resultReader?: ResultReader;
  /** Lets handlers post origin replies (`ctx.reply`); without it that call fails FAILED_PRECONDITION. */
  replies?: HarnessReplies;
  /**
   * Asked before running a reclaimed entry: one whose turn already stood down (its outcome published, its worker
   * killed before the acknowledgement) is acknowledged without running the handler (outcome `stale`). Without it
   * every reclaimed entry runs, and the coordinator drops the stale outcome.
   */
  turnCheck?: TurnCheck;
  /** Longest a read blocks when the stream is empty. @defaultValue 1000 */
  blockMs?: number;
  /** Consumer name within the group; unique per process. @defaultValue `consumerName()` from bus/keys */
  consumer?: string;
  /**
   * Live flags. BUS_ENABLED or HARNESS_ENABLED off for this queue: no new work is read or reclaimed, turns in
   * flight finish. BUS_ROUTED off for this queue: `ctx.delegate()` and `ctx.delegateAll()` fail the turn with
   * BUS_NOT_ROUTED (`ctx.awaitMore()` asks nothing new, so it is still allowed).
   * @defaultValue everything on
   */
  flags?: HarnessFlags;
  /**
   * Where failures caused by an unreachable Redis or Postgres go: logged once per outage there, while the read
   * loop backs off (up to 5 s) instead of logging each failed read. @defaultValue one of its own
   */
  health?: DependencyHealth;
  /** Turns by outcome, their duration, in flight, read lag, heartbeats and reclaims (harness-metrics.ts). */
  metrics?: HarnessMetrics;
}

/** The options checked and defaulted; the queue named both as a bus endpoint and as a stream. */
export interface HarnessSettings {
  source: HarnessSource;
  /** `role:NAME` or `team:NAME`. */
  stream: string;
  /** How the flags name the queue's kind. */
  queueKind: "role" | "team";
  concurrency: number;
  maxPayloadBytes: number;
  reclaimIdleMs: number;
  heartbeatMs: number;
  shutdownGraceMs: number;
  blockMs: number;
  consumer: string;
}

/** Throws INVALID_ARGUMENT on the first option out of bounds, in the order they are listed here. */
export function settingsOf(options: HarnessOptions): HarnessSettings {
  const source = sourceOf(options);
  const queueKind = source.kind === EndpointKind.ROLE ? "role" : "team";
  const stream = `${queueKind}:${source.id}`;
  const concurrency = positiveInt(options.concurrency ?? 10, "concurrency", 1);
  const maxPayloadBytes = positiveInt(options.maxPayloadBytes, "maxPayloadBytes", 1);
  const reclaimIdleMs = positiveInt(options.reclaimIdleMs, "reclaimIdleMs", 2);
  const heartbeatMs = positiveInt(options.heartbeatMs, "heartbeatMs", 1);
  if (heartbeatMs >= reclaimIdleMs) {
    // A running turn's entry would go idle past the reclaim threshold between touches, and another worker
    // (or this one's own reclaim, bumping the delivery count) would take it while it is still being worked on.
    throw new SwitchyardError(ErrorCode.InvalidArgument, `harness heartbeatMs (${heartbeatMs}) must be below reclaimIdleMs (${reclaimIdleMs})`, {
      details: { path: "heartbeatMs" },
    });
  }
  if (options.signer?.sender !== stream) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `the harness of ${stream} needs a bus signer for ${stream}, not ${options.signer?.sender ?? "none"}`, {
      details: { path: "signer" },
    });
  }
  const shutdownGraceMs = positiveInt(options.shutdownGraceMs, "shutdownGraceMs", 0);
  const blockMs = positiveInt(options.blockMs ?? 1000, "blockMs", 1);
  const consumer = options.consumer ?? consumerName(stream);
  return { source, stream, queueKind, concurrency, maxPayloadBytes, reclaimIdleMs, heartbeatMs, shutdownGraceMs, blockMs, consumer };
}

function positiveInt(value: number, name: string, min: number): number {
  if (!Number.isInteger(value) || value < min) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `harness option ${name} must be an integer >= ${min}, got ${value}`, {
      details: { path: name },
    });
  }
  return value;
}

function sourceOf(options: HarnessOptions): HarnessSource {
  const { role, team } = options;
  if ((role === undefined) === (team === undefined)) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, "a harness consumes exactly one of `role` or `team`", { details: { path: "role" } });
  }
  const text = role !== undefined ? `role:${role}` : `team:${team}`;
  const parsed = parseDestination(text);
  if (!parsed) throw new SwitchyardError(ErrorCode.InvalidArgument, `${JSON.stringify(text)} is not a valid queue name`, { details: { path: role !== undefined ? "role" : "team" } });
  return { kind: parsed.kind === "role" ? EndpointKind.ROLE : EndpointKind.TEAM, id: parsed.id };
}

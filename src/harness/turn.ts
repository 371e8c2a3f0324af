/**
 * One turn: a handler run for one bus entry (WORK or REPLY), from context to the envelope it produces.
 *
 * Order matters for at-least-once delivery: the outgoing envelope is published FIRST and the incoming entry
 * acknowledged after (`Bus.publishAndAck`: one round trip, no acknowledgement when the publish failed). A crash
 * in between redelivers the entry; before running a redelivered entry again the turn
 * asks the TurnCheck (when there is one) whether its turn is still current, and acknowledges it unrun when not.
 * Whatever slips through, the coordinator drops as a duplicate outcome by step state. A turn abandoned at shutdown
 * publishes and acknowledges nothing, so its entry is reclaimed.
 *
 * The run is here; what its parts share is the TurnState (turn-state.ts), the handler's `ctx` is built in
 * handler-context.ts, the entries acknowledged unrun in turn-skips.ts, and the outcome sent in turn-outcome.ts.
 */
import type { EnvelopeSigner } from "../bus/auth/bus-auth.js";
import type { DependencyHealth } from "../process/dependency-health.js";
import { performance } from "node:perf_hooks";
import type { Bus, BusEntry } from "../bus/bus.js";
import type { Envelope } from "../bus/codec.js";
import { ErrorCode } from "../errors.js";
import type { Logger } from "../logger.js";
import { createDelegationMarkers } from "./delegation-markers.js";
import { errorInfoOf } from "./error-info.js";
import { encodeJsonPayload, queryEnvelope, queryPayload, resultErrorEnvelope, resultOkEnvelope, workFromEnvelope, type HarnessSource } from "./envelopes.js";
import { createHandlerContext } from "./handler-context.js";
import type { ResultReader } from "./result-reader.js";
import type { TurnCheck } from "./turn-check.js";
import { sendOutcome, zeroUsage } from "./turn-outcome.js";
import { isCurrentTurn, skipUnrun } from "./turn-skips.js";
import { TurnState } from "./turn-state.js";
import type { ReplyOutcomeQuery } from "../replies/redis-reply-outcome.js";
import type { ReplyOutcome } from "../core/reply-types.js";
import type { AnyHandler, Work } from "./types.js";
import { endTurnSpan, startTurnSpan, withSpan } from "../telemetry/turn-spans.js";

/**
 * Where `ctx.reply` waits for its outcome: over Redis in a harness process (replies/redis-reply-outcome.ts, fed by
 * the coordinators' relay), or on the reply rows where an embedder holds a database (replies/reply-outcome.ts).
 */
export interface HarnessReplies {
  /** Resolves with the outcome, or `unknown` / `outcome_pending` at the deadline; rejects CANCELLED on abort. */
  waitForOutcome(query: ReplyOutcomeQuery, options: { signal: AbortSignal; deadlineMs: number }): Promise<ReplyOutcome>;
  /** replyDeadlineMs(config): the sender's dials plus 30 s. */
  deadlineMs: number;
}

/**
 * `stale`: a redelivered entry whose turn had already stood down, acknowledged without running the handler.
 * `duplicate`: a second entry carrying an envelope another entry already claimed, acknowledged without running.
 */
export type TurnOutcome = "completed" | "failed" | "delegated" | "abandoned" | "unsent" | "stale" | "duplicate";

/** How the entry reached this harness. */
export interface Delivery {
  /** It came from a reclaim, so Redis has delivered it more than once. @defaultValue false */
  redelivered?: boolean;
  /**
   * Another entry of the stream that claimed this entry's envelope first (`Bus.claimEnvelopes`): this entry is a
   * second publication of it and is acknowledged without running. Absent when this entry holds the claim, or when
   * the claim could not be asked (fail open: the coordinator still drops a stale outcome).
   */
  duplicateOf?: string;
  /** A reclaimed entry whose step was handed a later turn since (`Bus.supersededTurns`): acknowledged unrun. */
  superseded?: boolean;
}

export interface TurnDeps {
  bus: Bus;
  stream: string;
  group: string;
  consumer: string;
  source: HarnessSource;
  signer: EnvelopeSigner;
  handler: AnyHandler;
  logger: Logger;
  maxPayloadBytes: number;
  heartbeatMs: number;
  resultReader: ResultReader | undefined;
  /** Where `ctx.reply` reads its outcome (the reply row) and how long it waits; without it `ctx.reply` fails. */
  replies?: HarnessReplies;
  now: () => number;
  /** BUS_ROUTED for this queue; false makes `ctx.delegate()` and `ctx.delegateAll()` fail the turn. @defaultValue always routed */
  routed?: () => boolean;
  /** Asked before re-running an entry delivered more than once; without it every redelivery runs. */
  turnCheck?: TurnCheck;
  /** Failures caused by an unreachable Redis/Postgres go here (logged once per outage) instead of one line each. */
  health?: DependencyHealth;
  /** Told what metrics count beyond the outcome (harness-metrics.ts). */
  observer?: TurnObserver;
}

/** What a turn tells its harness's metrics beyond its outcome. */
export interface TurnObserver {
  /** A HEARTBEAT envelope was published for the handler. */
  heartbeatSent(): void;
  /** The handler failed; `retryable` false fails the step now (no retry). */
  handlerFailed(retryable: boolean): void;
}

export interface RunningTurn {
  entryId: string;
  /** Settles when the turn has published and acknowledged (or given up); never rejects. */
  done: Promise<TurnOutcome>;
  /**
   * Gives up on the turn: aborts the handler's signal; nothing is published or acknowledged afterwards.
   * Returns false when the turn had already settled or been abandoned.
   */
  abandon(reason: string): boolean;
}

/**
 * `delivery.redelivered`: the entry came from a reclaim, so Redis has delivered it more than once (the bus port
 * carries no delivery count; a read of new entries is always the first delivery, a reclaim never is).
 */
export function startTurn(entry: BusEntry, deps: TurnDeps, delivery: Delivery = {}): RunningTurn {
  const turn = new TurnState(entry, deps, delivery);
  const ran = runTurn(turn).catch((error: unknown): TurnOutcome => {
    turn.logger.error({ err: error }, "turn crashed; the entry stays pending and will be reclaimed");
    return "unsent";
  });
  turn.done = (turn.traced ? ran.then((outcome) => (endTurnSpan(turn.span, outcome), outcome)) : ran).finally(() => {
    turn.settled = true;
    turn.stopTouching();
  });
  return turn;
}

/** The turn from its entry to its outcome: the skips first, then the handler, then what it returned, sent. */
async function runTurn(turn: TurnState): Promise<TurnOutcome> {
  const { deps, envelope, delivery, logger } = turn;
  // Before anything else: a second copy must not even fail the step (its first copy may be running right now).
  if (delivery.duplicateOf !== undefined) return skipUnrun(turn, "duplicate", { firstEntryId: delivery.duplicateOf }, "duplicate entry skipped: another entry of the same envelope was taken first");
  const usage = zeroUsage();
  let work: Work;
  try {
    work = workFromEnvelope(envelope);
  } catch (error) {
    logger.warn({ err: error }, "incoming envelope is unusable; failing the step");
    // No turn on this RESULT: we could not read which turn the entry started.
    return sendOutcome(turn, resultErrorEnvelope(envelope, deps.source, errorInfoOf(error), usage, undefined, deps.now()), "failed");
  }
  // Only a redelivery can be a turn that already stood down; the first delivery never pays the question.
  if (delivery.redelivered) {
    if (delivery.superseded) return skipUnrun(turn, "stale", {}, "stale entry skipped: a later turn of its step has come since");
    const current = await isCurrentTurn(turn, work);
    // Abandoned while asking (shutdown): acknowledge nothing, run nothing; the entry is reclaimed and asked again.
    if (turn.abandoned) return "abandoned";
    if (!current) return skipUnrun(turn, "stale", {}, "stale entry skipped: its turn already stood down");
  }

  if (turn.traced) turn.span = startTurnSpan(envelope, deps.source);
  const markers = createDelegationMarkers(work, { stream: deps.stream, ...(deps.routed ? { routed: deps.routed } : {}) });
  const ctx = createHandlerContext(turn, work, usage, markers);
  turn.startTouching();

  logger.debug({ resumed: work.resume !== undefined, depth: work.depth }, "turn started");
  const started = performance.now();
  let outgoing: Envelope;
  let outcome: TurnOutcome;
  // Sub-queries the QUERY asks (0 for awaitMore), logged with the outcome.
  let queries: number | undefined;
  try {
    // The input's type is the handler's promise to itself (a step input schema checks it); the harness cannot.
    const value: unknown = await withSpan(turn.span, () => deps.handler(work as Work<never>, ctx));
    usage.durationMs = performance.now() - started;
    // A delegation marker stands the turn down with a QUERY; anything else is the step's output.
    const marker = markers.markerOf(value);
    if (marker) {
      const payload = encodeJsonPayload(queryPayload(marker, work.turn), deps.maxPayloadBytes, "delegation queries and state");
      outgoing = queryEnvelope(envelope, deps.source, work, marker, payload, usage, deps.now());
      outcome = "delegated";
      queries = marker.queries.length;
    } else {
      const payload = encodeJsonPayload(value, deps.maxPayloadBytes, "handler output");
      outgoing = resultOkEnvelope(envelope, deps.source, payload, usage, work.turn, deps.now());
      outcome = "completed";
    }
  } catch (error) {
    usage.durationMs = performance.now() - started;
    if (turn.abandoned) return "abandoned";
    const info = errorInfoOf(error);
    // The route stays off until an SRE turns it on: retrying the step now cannot help.
    if (info.code === ErrorCode.BusNotRouted) info.retryable = false;
    turn.span?.setAttribute("switchyard.error", info.code);
    logger.warn({ err: error, code: info.code, retryable: info.retryable }, "handler failed");
    deps.observer?.handlerFailed(info.retryable);
    outgoing = resultErrorEnvelope(envelope, deps.source, info, usage, work.turn, deps.now());
    outcome = "failed";
  } finally {
    turn.stopTouching();
  }
  if (turn.abandoned) return "abandoned";
  return sendOutcome(turn, outgoing, outcome, usage, work.turn, queries);
}

/**
 * One turn: a handler run for one bus entry (WORK or REPLY), from context to the envelope it produces.
 *
 * Order matters for at-least-once delivery: the outgoing envelope is published FIRST and the incoming entry
 * acknowledged after (`Bus.publishAndAck`: one round trip, no acknowledgement when the publish failed). A crash
 * in between redelivers the entry; before running a redelivered entry again the turn
 * asks the TurnCheck (when there is one) whether its turn is still current, and acknowledges it unrun when not.
 * Whatever slips through, the coordinator drops as a duplicate outcome by step state. A turn abandoned at shutdown
 * publishes and acknowledges nothing, so its entry is reclaimed.
 */
import type { EnvelopeSigner } from "../bus/auth/bus-auth.js";
import type { DependencyHealth } from "../process/dependency-health.js";
import { performance } from "node:perf_hooks";
import type { Bus, BusEntry } from "../bus/bus.js";
import { answerInbox } from "../bus/shards.js";
import type { Envelope } from "../bus/codec.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Logger } from "../logger.js";
import { createDelegationMarkers } from "./delegation-markers.js";
import { errorInfoOf } from "./error-info.js";
import { addUsage } from "./handler-usage.js";
import {
  encodeJsonPayload,
  heartbeatEnvelope,
  queryEnvelope,
  queryPayload,
  replyEnvelope,
  resultErrorEnvelope,
  resultOkEnvelope,
  workFromEnvelope,
  carriedResultOf,
  type HarnessSource,
  type TurnUsage,
} from "./envelopes.js";
import type { ResultReader } from "./result-reader.js";
import type { TurnCheck } from "./turn-check.js";
import { defaultReplyKey, MAX_REPLY_KEY_CHARS } from "../replies/reply-key.js";
import type { ReplyOutcomeQuery } from "../replies/redis-reply-outcome.js";
import type { ReplyOutcome } from "../core/reply-types.js";
import type { AnyHandler, HandlerContext, ReplyOptions, UsageReport, Work } from "./types.js";
import type { Span } from "@opentelemetry/api";
import { endTurnSpan, stampTrace, startTurnSpan, withSpan } from "../telemetry/turn-spans.js";
import { tracingOn } from "../telemetry/tracing.js";

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

function invalid(message: string, details: Record<string, unknown> = {}): SwitchyardError {
  return new SwitchyardError(ErrorCode.InvalidArgument, message, { details });
}

/**
 * `delivery.redelivered`: the entry came from a reclaim, so Redis has delivered it more than once (the bus port
 * carries no delivery count; a read of new entries is always the first delivery, a reclaim never is).
 */
export function startTurn(entry: BusEntry, deps: TurnDeps, delivery: Delivery = {}): RunningTurn {
  const { redelivered = false, duplicateOf } = delivery;
  const envelope = entry.envelope;
  const logger = deps.logger.child({
    orgId: envelope.orgId,
    taskId: envelope.taskId,
    stepId: envelope.stepId,
    envelopeId: envelope.id,
    attempt: envelope.attempt,
    entryId: entry.id,
  });
  const controller = new AbortController();
  let abandoned = false;
  let settled = false;
  let touchTimer: NodeJS.Timeout | undefined;
  // Tracing on only (src/telemetry/turn-spans.ts): the turn's span, and the trace its envelopes carry.
  const traced = tracingOn();
  let span: Span | undefined;

  const touch = (): Promise<void> => deps.bus.touch(deps.stream, deps.group, deps.consumer, [entry.id]);

  async function publish(outgoing: Envelope): Promise<void> {
    // Signing encodes and validates (MALFORMED_ENVELOPE / PAYLOAD_TOO_LARGE), as publishing did.
    await deps.bus.publishEncoded([{ stream: answerInbox(envelope), data: deps.signer.sign(stampTrace(span, outgoing)) }]);
  }

  async function run(): Promise<TurnOutcome> {
    // Before anything else: a second copy must not even fail the step (its first copy may be running right now).
    if (duplicateOf !== undefined) return skipUnrun("duplicate", { firstEntryId: duplicateOf }, "duplicate entry skipped: another entry of the same envelope was taken first");
    const usage: TurnUsage = { cost: 0, inputTokens: 0, outputTokens: 0, durationMs: 0 };
    let work: Work;
    try {
      work = workFromEnvelope(envelope);
    } catch (error) {
      logger.warn({ err: error }, "incoming envelope is unusable; failing the step");
      // No turn on this RESULT: we could not read which turn the entry started.
      return send(resultErrorEnvelope(envelope, deps.source, errorInfoOf(error), usage, undefined, deps.now()), "failed");
    }
    // Only a redelivery can be a turn that already stood down; the first delivery never pays the question.
    if (redelivered) {
      if (delivery.superseded) return skipUnrun("stale", {}, "stale entry skipped: a later turn of its step has come since");
      const current = await isCurrentTurn(work);
      // Abandoned while asking (shutdown): acknowledge nothing, run nothing; the entry is reclaimed and asked again.
      if (abandoned) return "abandoned";
      if (!current) return skipUnrun("stale", {}, "stale entry skipped: its turn already stood down");
    }

    if (traced) span = startTurnSpan(envelope, deps.source);
    const markers = createDelegationMarkers(work, { stream: deps.stream, ...(deps.routed ? { routed: deps.routed } : {}) });
    const ctx: HandlerContext = {
      signal: controller.signal,
      logger,
      async heartbeat() {
        if (controller.signal.aborted) throw new SwitchyardError(ErrorCode.Cancelled, "the turn was abandoned");
        if (settled) return;
        await touch();
        await publish(heartbeatEnvelope(envelope, deps.source, deps.now()));
        deps.observer?.heartbeatSent();
      },
      usage(report: UsageReport) {
        addUsage(usage, report);
      },
      delegate: markers.delegate,
      delegateAll: markers.delegateAll,
      awaitMore: markers.awaitMore,
      async reply(text: string, options: ReplyOptions = {}) {
        if (controller.signal.aborted) throw new SwitchyardError(ErrorCode.Cancelled, "the turn was abandoned");
        if (!deps.replies) throw new SwitchyardError(ErrorCode.FailedPrecondition, "this harness cannot learn reply outcomes; pass `replies` to post origin replies");
        if (typeof text !== "string") throw invalid("reply text must be a string");
        const key = options.idempotencyKey ?? defaultReplyKey(work.taskId, text);
        if (typeof key !== "string" || key === "" || key.length > MAX_REPLY_KEY_CHARS) throw invalid(`reply idempotencyKey must be a string of 1 to ${MAX_REPLY_KEY_CHARS} characters`);
        const request = replyEnvelope(envelope, deps.source, text, key, deps.now());
        await publish(request);
        const outcome = await deps.replies.waitForOutcome({ orgId: work.orgId, taskId: work.taskId, requestId: request.id, idempotencyKey: key }, { signal: controller.signal, deadlineMs: deps.replies.deadlineMs });
        logger.info({ replyId: outcome.replyId, status: outcome.status, code: outcome.code }, "origin reply");
        return outcome;
      },
      async readResult(ref: string) {
        // The REPLY that woke this turn carries its delegate's output when it fit: no store is asked. A copy, so a
        // handler that edits what it read reads the original again.
        const carried = ref === work.resume?.reply.resultRef ? carriedResultOf(envelope) : undefined;
        if (carried) return structuredClone(carried.value);
        if (!deps.resultReader) {
          throw new SwitchyardError(
            ErrorCode.FailedPrecondition,
            `the result ${ref} did not travel in this turn's REPLY (another reply's, or over the payload cap) and this harness has no result reader; keep what a later turn needs in the checkpoint state`,
            { details: { ref } },
          );
        }
        return deps.resultReader.read(work.orgId, ref);
      },
    };

    touchTimer = setInterval(() => {
      touch().catch((error: unknown) => {
        if (!deps.health?.absorb(error)) logger.warn({ err: error }, "could not touch the entry; it may be reclaimed");
      });
    }, deps.heartbeatMs);
    touchTimer.unref?.();

    logger.debug({ resumed: work.resume !== undefined, depth: work.depth }, "turn started");
    const started = performance.now();
    let outgoing: Envelope;
    let outcome: TurnOutcome;
    // Sub-queries the QUERY asks (0 for awaitMore), logged with the outcome.
    let queries: number | undefined;
    try {
      // The input's type is the handler's promise to itself (a step input schema checks it); the harness cannot.
      const value: unknown = await withSpan(span, () => deps.handler(work as Work<never>, ctx));
      usage.durationMs = performance.now() - started;
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
      if (abandoned) return "abandoned";
      const info = errorInfoOf(error);
      // The route stays off until an SRE turns it on: retrying the step now cannot help.
      if (info.code === ErrorCode.BusNotRouted) info.retryable = false;
      span?.setAttribute("switchyard.error", info.code);
      logger.warn({ err: error, code: info.code, retryable: info.retryable }, "handler failed");
      deps.observer?.handlerFailed(info.retryable);
      outgoing = resultErrorEnvelope(envelope, deps.source, info, usage, work.turn, deps.now());
      outcome = "failed";
    } finally {
      clearInterval(touchTimer);
    }
    if (abandoned) return "abandoned";
    return send(outgoing, outcome, usage, work.turn, queries);
  }

  /** Asks the TurnCheck; a check that fails says "current": the coordinator still drops a stale outcome. */
  async function isCurrentTurn(work: Work): Promise<boolean> {
    if (!deps.turnCheck) return true;
    try {
      return await deps.turnCheck.isCurrent({ orgId: work.orgId, taskId: work.taskId, stepId: work.stepId, attempt: work.attempt, turn: work.turn });
    } catch (error) {
      if (deps.health?.absorb(error)) logger.debug({ err: error }, "could not check the turn in an outage; running the entry");
      else logger.warn({ err: error }, "could not check whether the turn is current; running the entry");
      return true;
    }
  }

  /** Acknowledges an entry without running it: its turn's outcome is already out, or another copy runs it. */
  async function skipUnrun(outcome: "stale" | "duplicate", fields: Record<string, unknown>, message: string): Promise<TurnOutcome> {
    try {
      await deps.bus.ack(deps.stream, deps.group, [entry.id]);
    } catch (error) {
      // Still pending: it is reclaimed and checked again.
      if (!deps.health?.absorb(error)) logger.warn({ err: error, outcome }, `could not acknowledge a ${outcome} entry`);
    }
    logger.info({ outcome, ...fields }, message);
    return outcome;
  }

  async function send(outgoing: Envelope, outcome: TurnOutcome, usage?: TurnUsage, turn?: number, queries?: number): Promise<TurnOutcome> {
    try {
      // Signing encodes and validates (MALFORMED_ENVELOPE / PAYLOAD_TOO_LARGE) before anything is written.
      const data = deps.signer.sign(stampTrace(span, outgoing));
      // One round trip: the outcome, then (only once it is on the stream) the acknowledgement.
      await deps.bus.publishAndAck([{ stream: answerInbox(envelope), data }], { stream: deps.stream, group: deps.group, ids: [entry.id] });
    } catch (error) {
      if (error instanceof SwitchyardError && error.details.published === true) {
        // The outcome is out; a redelivery re-runs the handler and the coordinator drops the duplicate.
        if (!deps.health?.absorb(error)) logger.warn({ err: error }, "could not acknowledge the entry after publishing its outcome");
        return logSent(outcome, usage, queries);
      }
      // The bus refused the envelope itself (size or shape): that will never succeed, so tell the coordinator
      // the step failed rather than leaving the entry to be redelivered forever.
      const refused = error instanceof SwitchyardError && (error.code === ErrorCode.PayloadTooLarge || error.code === ErrorCode.MalformedEnvelope);
      if (refused && outcome !== "failed") {
        logger.warn({ err: error }, "the bus refused the outgoing envelope; failing the step");
        const fallback = resultErrorEnvelope(envelope, deps.source, errorInfoOf(error), usage ?? zeroUsage(), turn, deps.now());
        return send(fallback, "failed", usage, turn);
      }
      if (deps.health?.absorb(error)) logger.debug({ err: error }, "could not publish the turn's outcome in an outage; the entry stays pending and will be reclaimed");
      else logger.error({ err: error }, "could not publish the turn's outcome; the entry stays pending and will be reclaimed");
      return "unsent";
    }
    return logSent(outcome, usage, queries);
  }

  function logSent(outcome: TurnOutcome, usage: TurnUsage | undefined, queries: number | undefined): TurnOutcome {
    logger.info(
      { outcome, kind: outcome === "delegated" ? "QUERY" : "RESULT", ...(queries !== undefined ? { queries } : {}), durationMs: Math.round(usage?.durationMs ?? 0), cost: usage?.cost ?? 0 },
      `turn ${outcome}`,
    );
    return outcome;
  }

  const ran = run().catch((error: unknown): TurnOutcome => {
    logger.error({ err: error }, "turn crashed; the entry stays pending and will be reclaimed");
    return "unsent";
  });
  const done = (traced ? ran.then((outcome) => (endTurnSpan(span, outcome), outcome)) : ran)
    .finally(() => {
      settled = true;
      clearInterval(touchTimer);
    });

  return {
    entryId: entry.id,
    done,
    abandon(reason: string): boolean {
      if (settled || abandoned) return false;
      abandoned = true;
      clearInterval(touchTimer);
      logger.warn({ reason }, "abandoning the turn; its entry stays pending and will be reclaimed");
      controller.abort(new SwitchyardError(ErrorCode.Cancelled, reason));
      return true;
    },
  };
}

function zeroUsage(): TurnUsage {
  return { cost: 0, inputTokens: 0, outputTokens: 0, durationMs: 0 };
}

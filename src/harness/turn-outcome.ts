/**
 * Sending a turn's outcome (its RESULT or QUERY) and acknowledging its entry, in one round trip and in that order
 * (`Bus.publishAndAck`: no acknowledgement when the publish failed), so a crash in between redelivers the entry
 * rather than losing the outcome.
 */
import { answerInbox } from "../bus/shards.js";
import type { Envelope } from "../bus/codec.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { stampTrace } from "../telemetry/turn-spans.js";
import { errorInfoOf } from "./error-info.js";
import { resultErrorEnvelope, type TurnUsage } from "./envelopes.js";
import type { TurnState } from "./turn-state.js";
import type { TurnOutcome } from "./turn.js";

/**
 * `usage`, `turnNumber`: what a failed RESULT carries if the bus refuses `outgoing` (absent when the incoming
 * envelope could not be read); `queries`: the sub-queries a QUERY asks, logged.
 */
export async function sendOutcome(turn: TurnState, outgoing: Envelope, outcome: TurnOutcome, usage?: TurnUsage, turnNumber?: number, queries?: number): Promise<TurnOutcome> {
  const { deps, envelope, logger } = turn;
  try {
    // Signing encodes and validates (MALFORMED_ENVELOPE / PAYLOAD_TOO_LARGE) before anything is written.
    const data = deps.signer.sign(stampTrace(turn.span, outgoing));
    // One round trip: the outcome, then (only once it is on the stream) the acknowledgement.
    await deps.bus.publishAndAck([{ stream: answerInbox(envelope), data }], { stream: deps.stream, group: deps.group, ids: [turn.entryId] });
  } catch (error) {
    if (error instanceof SwitchyardError && error.details.published === true) {
      // The outcome is out; a redelivery re-runs the handler and the coordinator drops the duplicate.
      if (!deps.health?.absorb(error)) logger.warn({ err: error }, "could not acknowledge the entry after publishing its outcome");
      return logSent(turn, outcome, usage, queries);
    }
    // The bus refused the envelope itself (size or shape): that will never succeed, so tell the coordinator
    // the step failed rather than leaving the entry to be redelivered forever.
    const refused = error instanceof SwitchyardError && (error.code === ErrorCode.PayloadTooLarge || error.code === ErrorCode.MalformedEnvelope);
    if (refused && outcome !== "failed") {
      logger.warn({ err: error }, "the bus refused the outgoing envelope; failing the step");
      const fallback = resultErrorEnvelope(envelope, deps.source, errorInfoOf(error), usage ?? zeroUsage(), turnNumber, deps.now());
      return sendOutcome(turn, fallback, "failed", usage, turnNumber);
    }
    if (deps.health?.absorb(error)) logger.debug({ err: error }, "could not publish the turn's outcome in an outage; the entry stays pending and will be reclaimed");
    else logger.error({ err: error }, "could not publish the turn's outcome; the entry stays pending and will be reclaimed");
    return "unsent";
  }
  return logSent(turn, outcome, usage, queries);
}

function logSent(turn: TurnState, outcome: TurnOutcome, usage: TurnUsage | undefined, queries: number | undefined): TurnOutcome {
  turn.logger.info(
    { outcome, kind: outcome === "delegated" ? "QUERY" : "RESULT", ...(queries !== undefined ? { queries } : {}), durationMs: Math.round(usage?.durationMs ?? 0), cost: usage?.cost ?? 0 },
    `turn ${outcome}`,
  );
  return outcome;
}

export function zeroUsage(): TurnUsage {
  return { cost: 0, inputTokens: 0, outputTokens: 0, durationMs: 0 };
}

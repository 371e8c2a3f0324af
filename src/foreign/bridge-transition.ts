/**
 * What one observation of a foreign task (a push, a poll) does to its bridge — pure, so the locking path
 * (resume.ts) and the callback route's optimistic path (callback-intake.ts) cannot disagree.
 *
 * A non-terminal state updates the bridge (status, last state, artifacts merged). A terminal state — and the
 * interrupted states `input-required` / `auth-required`, which we cannot serve yet — resolves it: the step is then
 * resumed by the RESULT `resultFor` builds. A resolved bridge never changes again, so duplicates and late pushes
 * change nothing; a non-terminal push that tells nothing new (same state, artifacts already merged) is `unchanged`
 * and hands back the same object, so no row is written (not even `updated_at`, which the sweep's "no news for a
 * while" threshold reads); a push about another foreign task than the bridge's is a mismatch.
 */
import { isDeepStrictEqual } from "node:util";
import type { EnvelopeSigner } from "../bus/auth/bus-auth.js";
import type { StepError } from "../coordinator/model.js";
import { foreignOutput, mergeArtifacts, type ForeignArtifact } from "./a2a/artifacts.js";
import { isInterruptedForeignState, isTerminalForeignState, type ForeignTaskState } from "./a2a/task-state.js";
import { isOpen, type BridgeRecord, type BridgeStatus } from "./bridge-store.js";
import { foreignResultEnvelope, outputTooLarge, type OutboxEnvelope } from "./foreign-result.js";
import { priceHop, type HopRates } from "./pricing.js";

/** What a push or a poll says about the foreign task. */
export interface ForeignObservation {
  foreignTaskId: string;
  state?: ForeignTaskState;
  artifacts: ForeignArtifact[];
  message?: string;
  /**
   * Whether `artifacts` is the task's complete list (a whole Task: a GetTask answer, the SendMessage answer, a push
   * of the Task snapshot, an MCP result) rather than an update (a status or artifact push).
   */
  complete?: boolean;
  /** Usage the agent reported with this observation (pricing.ts reads it off A2A metadata and MCP `_meta`). */
  usage?: ForeignUsage;
}

/** Usage an agent reports; `cost` in our cost units when it says so, tokens when it counts them. */
export interface ForeignUsage {
  cost?: number;
  inputTokens?: number;
  outputTokens?: number;
}

export type ObservationOutcome = "updated" | "unchanged" | "resumed" | "ignored" | "mismatch" | "unknown";

/** How a resolved bridge ended. */
export interface Resolution {
  state: ForeignTaskState;
  message?: string | undefined;
  /** Set when we, not the agent, end the task (its output grew too large). */
  error?: StepError;
}

export interface Transition {
  outcome: ObservationOutcome;
  /** The bridge after the observation; the same object when nothing changed. */
  bridge: BridgeRecord;
  /** Set when this observation resolved the bridge. */
  end?: Resolution;
}

/** Applies one observation to `bridge`; see the module comment. */
export function observe(bridge: BridgeRecord, observation: ForeignObservation, maxPayloadBytes: number): Transition {
  if (!isOpen(bridge.status)) return { outcome: "ignored", bridge };
  if (bridge.foreignTaskId !== null && bridge.foreignTaskId !== observation.foreignTaskId) return { outcome: "mismatch", bridge };
  const artifacts = mergeArtifacts(bridge.artifacts, observation.artifacts);
  const state = observation.state;
  // A Task's metadata is cumulative, so the latest report wins (an observation without usage keeps the last one).
  const base = { ...bridge, artifacts, foreignTaskId: bridge.foreignTaskId ?? observation.foreignTaskId, usage: observation.usage ?? bridge.usage };
  if (isTerminalForeignState(state) || isInterruptedForeignState(state)) {
    return { outcome: "resumed", bridge: { ...base, status: resolvedStatus(state!), lastState: state! }, end: { state: state!, message: observation.message } };
  }
  // Merged artifacts are bounded too: an agent streaming updates must not grow the row without end. The final
  // output is checked exactly against the payload cap when the RESULT is encoded; this is the looser bound.
  if (JSON.stringify(artifacts).length > 2 * maxPayloadBytes) {
    return {
      outcome: "resumed",
      bridge: { ...base, status: "failed", lastState: state ?? bridge.lastState },
      end: { state: "failed", error: outputTooLarge(bridge.agentKey, maxPayloadBytes) },
    };
  }
  const status: BridgeStatus = state === "working" || bridge.status === "working" ? "working" : bridge.status === "pending_send" ? "pending_send" : "dispatched";
  const next = { ...base, status, lastState: state ?? bridge.lastState };
  if (sameBridgeState(bridge, next)) return { outcome: "unchanged", bridge };
  return { outcome: "updated", bridge: next };
}

// Deep equality ignores key order: a bridge read back from jsonb has its artifact keys reordered.
function sameBridgeState(a: BridgeRecord, b: BridgeRecord): boolean {
  return a.status === b.status && a.lastState === b.lastState && a.foreignTaskId === b.foreignTaskId && isDeepStrictEqual(a.artifacts, b.artifacts) && isDeepStrictEqual(a.usage, b.usage);
}

/** A resolved bridge's RESULT, and the bridge with how it was priced (to write with it). */
export interface PricedResult {
  bridge: BridgeRecord;
  result: OutboxEnvelope;
}

/**
 * The RESULT that resumes the step of a bridge resolved as `end` at `nowMs`, priced by pricing.ts from the usage the
 * agent reported or the registry's `rates` and the elapsed time since the send started (since the hop, when a push
 * beat the sender's record of the send).
 */
export function resultFor(bridge: BridgeRecord, end: Resolution, rates: HopRates, signer: EnvelopeSigner, maxPayloadBytes: number, nowMs: number): PricedResult {
  const ok = end.state === "completed" && !end.error;
  const error = ok ? null : (end.error ?? stepErrorFor(bridge.agentKey, end.state, end.message));
  const started = bridge.sentAt ?? bridge.createdAt;
  const { cost, pricedBy } = priceHop(rates, bridge.usage ?? undefined, started ? nowMs - started.getTime() : 0);
  const result = foreignResultEnvelope(bridge, "final", { ok, output: ok ? foreignOutput(bridge.artifacts) : null, error, cost, pricedBy }, signer, maxPayloadBytes, nowMs);
  return { bridge: { ...bridge, pricedBy }, result };
}

function resolvedStatus(state: ForeignTaskState): BridgeStatus {
  return state === "completed" || state === "canceled" || state === "rejected" ? state : "failed";
}

function stepErrorFor(agentKey: string, state: ForeignTaskState, message: string | undefined): StepError {
  const why = message ? `: ${message}` : "";
  switch (state) {
    case "canceled":
      return { code: "FOREIGN_CANCELED", message: `foreign agent ${agentKey} canceled the task${why}`, retryable: false };
    case "rejected":
      return { code: "FOREIGN_REJECTED", message: `foreign agent ${agentKey} rejected the task${why}`, retryable: false };
    case "input_required":
      return { code: "FOREIGN_INPUT_REQUIRED", message: `foreign agent ${agentKey} asks for more input, which Switchyard cannot provide yet; the step fails closed${why}`, retryable: false };
    case "auth_required":
      return { code: "FOREIGN_AUTH_REQUIRED", message: `foreign agent ${agentKey} asks for authentication, which Switchyard cannot provide yet; the step fails closed${why}`, retryable: false };
    default:
      // Like a worker's failure, worth another attempt — which decide.ts grants only to an agent registered
      // idempotent; any other fails the step as FOREIGN_NOT_RETRIED (a foreign dead letter) when it had retries.
      return { code: "FOREIGN_FAILED", message: `foreign agent ${agentKey} failed the task${why}`, retryable: true };
  }
}

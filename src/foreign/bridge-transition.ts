/**
 * What one observation of a foreign task (a push, a poll) does to its bridge — pure, so the locking path
 * (resume.ts) and the callback route's optimistic path (callback-intake.ts) cannot disagree.
 *
 * A non-terminal state updates the bridge (status, last state, artifacts merged). A terminal state — and the
 * interrupted states `input-required` / `auth-required`, which we cannot serve yet — resolves it: the step is then
 * resumed by the RESULT `resultFor` builds. A resolved bridge never changes again, so duplicates change nothing; a
 * non-terminal push that tells nothing new (same state, artifacts already merged) is `unchanged` and hands back the
 * same object, so no row is written (not even `updated_at`, which the sweep's "no news for a while" threshold
 * reads); a push about another foreign task than the bridge's is a mismatch.
 *
 * No success before its artifacts are known. An observation that is `complete` (a whole Task: the SendMessage
 * answer, GetTask, a Task-snapshot push) carries the task's artifact list; when it is also TERMINAL it replaces what
 * pushes collected (a non-terminal snapshot may be older than the pushes that crossed it, so it merges). A
 * `completed` status push is not whole: pushes may arrive in any order, so the bridge stays open with `last_state`
 * `completed` and a GetTask due now (`pollNow`); the poller (poller.ts) resolves it from the whole task, or from
 * what was collected when the agent cannot answer and something was collected. Any observation of a
 * `pending_send` bridge makes it `dispatched`: it names the foreign task, so the agent has it. Other ends (failed, canceled, …) carry no output and resolve at
 * once. Artifacts pushed after the bridge resolved are not dropped: new ones are kept in `lateArtifacts` (outcome
 * `late`) for the operator, never merged into the RESULT already written.
 */
import { isDeepStrictEqual } from "node:util";
import type { StepError } from "../core/model.js";
import { artifactKnown, foreignOutput, mergeArtifacts, type ForeignArtifact } from "./a2a/artifacts.js";
import { isInterruptedForeignState, isTerminalForeignState, type ForeignTaskState } from "./a2a/task-state.js";
import { isOpen, type BridgeStatus } from "../core/bridge-status.js";
import type { BridgeRecord } from "../store/bridges/bridge-store.js";
import { foreignResultEnvelope, outputTooLarge, type OutboxEnvelope, type ResultWriting } from "./foreign-result.js";
import { priceHop, type HopRates } from "./pricing.js";
import { depthBeyond, MAX_JSON_DEPTH } from "../json-depth.js";

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
  /** The status message's parts as an artifact: the answer of a task that completes with no artifact. */
  statusAnswer?: ForeignArtifact;
}

/** Usage an agent reports; `cost` in our cost units when it says so, tokens when it counts them. */
export interface ForeignUsage {
  cost?: number;
  inputTokens?: number;
  outputTokens?: number;
}

export type ObservationOutcome = "updated" | "unchanged" | "resumed" | "ignored" | "late" | "mismatch" | "unknown";

/** Late artifacts kept per bridge at most; more are still counted and logged, not stored. */
export const MAX_LATE_ARTIFACTS = 64;

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
  /** The task ended but its artifacts must be confirmed: write the bridge with a GetTask due now. */
  pollNow?: boolean;
  /** Artifacts that arrived after the bridge resolved and were new (outcome `late`), to count and log. */
  late?: ForeignArtifact[];
}

/** Applies one observation to `bridge`; see the module comment. */
export function observe(bridge: BridgeRecord, observation: ForeignObservation, maxPayloadBytes: number): Transition {
  if (!isOpen(bridge.status)) return lateArrival(bridge, observation);
  if (bridge.foreignTaskId !== null && bridge.foreignTaskId !== observation.foreignTaskId) return { outcome: "mismatch", bridge };
  // Checked here, where every foreign answer (SendMessage, GetTask, push, MCP result) becomes bridge state, so no
  // path can store what the recursive walks downstream (jsonb, Value conversion, CEL) cannot read back.
  if (artifactsTooDeep(observation.statusAnswer ? [...observation.artifacts, observation.statusAnswer] : observation.artifacts)) {
    return { outcome: "resumed", bridge: { ...bridge, status: "failed", lastState: observation.state ?? bridge.lastState }, end: { state: "failed", error: outputTooDeep(bridge.agentKey) } };
  }
  // A whole task's list replaces what pushes collected (it has the chunks in their order); an empty one keeps them
  // (an agent that keeps no artifacts in its task, or our own "resolve with what was collected").
  // Only a TERMINAL whole task is the final list: a non-terminal snapshot (a SendMessage answer, a v0.3 Task push)
  // may land after newer artifact pushes, and replacing would drop them — so it merges like any update.
  const state = observation.state;
  const replaces = observation.complete === true && isTerminalForeignState(state) && observation.artifacts.length > 0;
  const artifacts = replaces ? mergeArtifacts([], observation.artifacts) : mergeArtifacts(bridge.artifacts, observation.artifacts);
  // Any observation names the foreign task, so the agent has it: a `pending_send` bridge becomes `dispatched` (the
  // poller, the sweep and the step-moved-on close then see it; the sender claims only bridges without a foreign id),
  // whether or not the sender lives to record its send.
  const status0: BridgeStatus = bridge.status === "pending_send" ? "dispatched" : bridge.status;
  // A Task's metadata is cumulative, so the latest report wins (an observation without usage keeps the last one).
  const base = { ...bridge, status: status0, artifacts, foreignTaskId: bridge.foreignTaskId ?? observation.foreignTaskId, usage: observation.usage ?? bridge.usage };
  if (state === "completed" && !observation.complete && mustConfirm(base)) {
    const next = { ...base, lastState: state };
    if (sameBridgeState(bridge, next)) return { outcome: "unchanged", bridge };
    return { outcome: "updated", bridge: next, pollNow: true };
  }
  if (state === "completed" && !hasOutput(base.artifacts)) {
    // The order of a completed task's answer: its artifacts; else its status message; else nothing, which fails
    // closed (an agent that completes with no answer must not read as an empty success). A call (MCP) is its own
    // answer, even when empty.
    if (observation.statusAnswer) return resolve({ ...base, artifacts: [observation.statusAnswer] }, state, observation);
    if (bridge.delivery !== "call") {
      return { outcome: "resumed", bridge: { ...base, status: "failed", lastState: state }, end: { state: "failed", error: noOutput(bridge.agentKey) } };
    }
  }
  if (isTerminalForeignState(state) || isInterruptedForeignState(state)) return resolve(base, state!, observation);
  // Merged artifacts are bounded too: an agent streaming updates must not grow the row without end. The final
  // output is checked exactly against the payload cap when the RESULT is encoded; this is the looser bound.
  if (JSON.stringify(artifacts).length > 2 * maxPayloadBytes) {
    return {
      outcome: "resumed",
      bridge: { ...base, status: "failed", lastState: state ?? bridge.lastState },
      end: { state: "failed", error: outputTooLarge(bridge.agentKey, maxPayloadBytes) },
    };
  }
  const status: BridgeStatus = state === "working" || bridge.status === "working" ? "working" : "dispatched";
  // A bridge waiting to confirm its end keeps that end as its last state, so it can still resolve with it.
  const lastState = isTerminalForeignState(bridge.lastState as ForeignTaskState) ? bridge.lastState : (state ?? bridge.lastState);
  const next = { ...base, status, lastState };
  if (sameBridgeState(bridge, next)) return { outcome: "unchanged", bridge };
  return { outcome: "updated", bridge: next };
}

function resolve(base: BridgeRecord, state: ForeignTaskState, observation: ForeignObservation): Transition {
  return { outcome: "resumed", bridge: { ...base, status: resolvedStatus(state), lastState: state }, end: { state, message: observation.message } };
}

function hasOutput(artifacts: readonly ForeignArtifact[]): boolean {
  return artifacts.some((artifact) => artifact.parts.length > 0);
}

function artifactsTooDeep(artifacts: readonly ForeignArtifact[]): boolean {
  return artifacts.some((artifact) => artifact.parts.some((part) => depthBeyond(part) !== 0));
}

function outputTooDeep(agentKey: string): StepError {
  return { code: "FOREIGN_OUTPUT_TOO_DEEP", message: `foreign agent ${agentKey} answered with JSON nested deeper than ${MAX_JSON_DEPTH} levels; the step fails closed`, retryable: false };
}

function noOutput(agentKey: string): StepError {
  return {
    code: "FOREIGN_NO_OUTPUT",
    message: `foreign agent ${agentKey} completed the task with no artifact and no status message; the step fails closed rather than succeed empty`,
    retryable: false,
  };
}

/** Whether a `completed` status push must be confirmed with GetTask before the bridge resolves; see the module comment. */
function mustConfirm(bridge: BridgeRecord): boolean {
  // Nothing to ask: a Message answer has no task, and a call (MCP) is its own answer. Anything else is asked every
  // time: pushes cross, so a status push may land between two artifact pushes and what was collected may be partial.
  return bridge.delivery !== "call" && !(bridge.foreignTaskId ?? "").startsWith("message:");
}

/** A push to a resolved bridge: artifacts it did not have are kept apart (`lateArtifacts`); nothing else changes. */
function lateArrival(bridge: BridgeRecord, observation: ForeignObservation): Transition {
  if (bridge.foreignTaskId !== null && bridge.foreignTaskId !== observation.foreignTaskId) return { outcome: "ignored", bridge };
  const fresh: ForeignArtifact[] = [];
  for (const artifact of observation.artifacts) {
    if (artifactsTooDeep([artifact])) continue;
    if (artifactKnown(bridge.artifacts, artifact)) continue;
    if ([...bridge.lateArtifacts, ...fresh].some((seen) => isDeepStrictEqual(seen, artifact))) continue;
    fresh.push(artifact);
  }
  if (fresh.length === 0) return { outcome: "ignored", bridge };
  const room = Math.max(0, MAX_LATE_ARTIFACTS - bridge.lateArtifacts.length);
  const kept = fresh.slice(0, room);
  return { outcome: "late", bridge: kept.length > 0 ? { ...bridge, lateArtifacts: [...bridge.lateArtifacts, ...kept] } : bridge, late: fresh };
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
export function resultFor(bridge: BridgeRecord, end: Resolution, rates: HopRates, writing: ResultWriting, nowMs: number): PricedResult {
  const ok = end.state === "completed" && !end.error;
  const error = ok ? null : (end.error ?? stepErrorFor(bridge.agentKey, end.state, end.message));
  const started = bridge.sentAt ?? bridge.createdAt;
  const { cost, pricedBy } = priceHop(rates, bridge.usage ?? undefined, started ? nowMs - started.getTime() : 0);
  const result = foreignResultEnvelope(bridge, "final", { ok, output: ok ? foreignOutput(bridge.artifacts) : null, error, cost, pricedBy }, writing, nowMs);
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

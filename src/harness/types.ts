/**
 * The handler-facing surface of the harness: what a worker's code receives and may return.
 *
 * ## The resume signature (delegation)
 *
 * A handler delegates by RETURNING the marker `ctx.delegate(...)` or `ctx.delegateAll(...)` gives it:
 *
 * ```ts
 * const handler: Handler = async (work, ctx) => {
 *   if (!work.resume) {
 *     // First turn: ask another destination, and checkpoint whatever the second turn needs.
 *     return ctx.delegate("role:analyst", { topic: work.input }, { state: { startedAt: 1 } });
 *   }
 *   // Second turn: the same handler, invoked again with the checkpoint and the REPLY.
 *   const { state, reply } = work.resume;
 *   if (reply.status === "error") throw new Error(`analyst failed: ${reply.error?.message}`);
 *   const analysis = await ctx.readResult(reply.resultRef);
 *   return { analysis, state };
 * };
 * ```
 *
 * When a handler returns a `Delegation`, the harness emits a QUERY to the coordinator (carrying `reply_to` = this
 * step and attempt, the turn it answers, each sub-query with its correlation id, and the checkpoint `state`),
 * acknowledges the incoming entry and keeps nothing resident: no promise, no memory, no slot waits for the answer.
 * When a delegate finishes (ok or error) the coordinator sends a REPLY and the SAME handler runs again — possibly in
 * a different process — with `work.input` = the original input and `work.resume = { state, reply, outstanding }`.
 *
 * ## Fan-out (the orchestrator pattern)
 *
 * `ctx.delegateAll([{ to, payload, correlationId? }, …], { state })` asks several destinations in one turn; each
 * sub-query is its own governed hop. Every REPLY (ok or error) wakes the handler once, one at a time, in the order
 * the coordinator received them — never two turns of one step at once, whichever processes run them — and each
 * resumed turn sees the `state` the previous turn returned and `outstanding`: the correlation ids still awaited.
 * A resumed turn returns one of:
 * - a final output: the step completes; replies still outstanding are recorded as orphans when they arrive;
 * - `ctx.awaitMore(state)`: keep waiting for the outstanding replies with a new checkpoint;
 * - `ctx.delegate(...)` / `ctx.delegateAll(...)`: ask more (also keeps waiting for the outstanding ones);
 * - or it throws (the attempt fails; replies to it become orphans).
 *
 * One marker per turn: creating two (two `delegate` calls, or `delegate` and `awaitMore`) fails the turn with
 * INVALID_ARGUMENT — collect the sub-queries into one `delegateAll`. The coordinator caps sub-queries outstanding
 * per step (default 16) and asked per step attempt (default 64); a turn over either fails the step with
 * DELEGATION_LIMIT. `state` must be JSON; anything not in it is gone on resume.
 */
import type { Logger } from "../logger.js";
import type { Destination } from "../domain.js";
import type { ReplyAddressView } from "../core/reply-address.js";
import type { ReplyOutcome } from "../core/reply-types.js";

export type { ReplyOutcome } from "../core/reply-types.js";

/** The answer to a delegation, as the resumed turn sees it. */
export interface Reply {
  status: "ok" | "error";
  /** The correlation id the QUERY carried, echoed. */
  correlationId: string;
  /** The delegate's step id. */
  sourceStepId: string;
  /** Reference to the delegate's stored output (`step:<taskId>/<stepId>`); read it with `ctx.readResult`. */
  resultRef: string;
  /** Present when `status` is `error`. */
  error?: { code: string; message: string };
  /** The REPLY's delegation depth (the query's depth + 1). */
  depth: number;
}

/** What a resumed turn is handed: its checkpoint, the one REPLY that woke it, and what is still awaited. */
export interface Resume {
  /** The `state` the previous turn of this step attempt returned with its delegation (or `awaitMore`). */
  state: unknown;
  reply: Reply;
  /**
   * Correlation ids of this attempt's sub-queries whose REPLY this handler has not seen yet (not counting `reply`),
   * in the order they were asked. Empty: this is the last reply the step is waiting for.
   */
  outstanding: string[];
}

/**
 * One unit of work: a step attempt, either fresh (WORK) or resumed after a delegation (REPLY). `Input` types
 * `work.input`; nothing checks it at run time unless the workflow step names an input schema (the coordinator
 * validates the step's input against it at dispatch).
 */
export interface Work<Input = unknown> {
  orgId: string;
  taskId: string;
  stepId: string;
  attempt: number;
  /** The id of the incoming envelope (WORK or REPLY). */
  envelopeId: string;
  /** The delegation depth of this work (0 for workflow steps; a delegated sub-query is deeper). */
  depth: number;
  /** The coordinator's turn number for this step (its turns that stood down so far); the QUERY or RESULT of this turn echoes it. */
  turn: number;
  /** The hop's effective clearance floor, as the coordinator stamped it. */
  clearanceFloor: number;
  /**
   * The step input. For workflow steps: `{ task: <task input>, steps: { <needed step id>: <output> } }`; for
   * delegated work: the query payload. On resume: the same input the first turn saw.
   */
  input: Input;
  /** Set when this turn resumes one that delegated. */
  resume?: Resume;
  /**
   * Where `ctx.reply` posts (the conversation the task came from): kind and display only, never a credential;
   * null when the task has no reply address (then `ctx.reply` answers `refused` / `no_reply_address`).
   */
  replyTo: ReplyAddressView | null;
}

export interface ReplyOptions {
  /** A repeat with the same key posts nothing and returns the first outcome. @defaultValue sha256(taskId, text) */
  idempotencyKey?: string;
}

export interface UsageReport {
  /** Cost in the tenant's cost units. */
  cost?: number;
  inputTokens?: number;
  outputTokens?: number;
}

export interface DelegateOptions {
  /** Matches the REPLY to this request; generated when omitted. */
  correlationId?: string;
  /** The checkpoint handed back on resume as `work.resume.state`. Must be JSON. */
  state?: unknown;
}

/** One sub-query of `ctx.delegateAll`. */
export interface SubQueryRequest {
  /** `role:NAME`, `team:NAME` or `foreign:KEY`. */
  to: string;
  payload: unknown;
  /** Matches the REPLY to this sub-query; unique among the step's outstanding ones. Generated when omitted. */
  correlationId?: string;
}

export interface DelegateAllOptions {
  /** The checkpoint handed back on resume as `work.resume.state`. Must be JSON. */
  state?: unknown;
}

/** One sub-query as the harness sends it. */
export interface SubQuery {
  readonly destination: Destination;
  readonly payload: unknown;
  readonly correlationId: string;
}

const DELEGATION_BRAND: unique symbol = Symbol.for("switchyard.harness.delegation");

/**
 * The marker a handler returns to stand its turn down: with sub-queries (`ctx.delegate`, `ctx.delegateAll`) or
 * with none (`ctx.awaitMore`). Create it through the context, never by hand.
 */
export interface Delegation {
  readonly [DELEGATION_BRAND]: true;
  /** Empty for `awaitMore`. */
  readonly queries: readonly SubQuery[];
  readonly state: unknown;
}

export function createDelegation(fields: Omit<Delegation, typeof DELEGATION_BRAND>): Delegation {
  return Object.freeze({ [DELEGATION_BRAND]: true as const, ...fields });
}

export function isDelegation(value: unknown): value is Delegation {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[DELEGATION_BRAND] === true;
}

export interface HandlerContext {
  /** Aborted when the harness gives up on this turn (shutdown grace exceeded). */
  signal: AbortSignal;
  /** Scoped with orgId, taskId, stepId and envelopeId. */
  logger: Logger;
  /** Keeps the entry claimed and tells the coordinator the step is alive (CONTROL heartbeat). */
  heartbeat(): Promise<void>;
  /** Adds to the usage reported with this turn's outcome; calls are summed. */
  usage(usage: UsageReport): void;
  /** Builds the delegation marker; RETURN it to delegate (see the module comment). Throws on a bad destination. */
  delegate(destination: string, payload: unknown, options?: DelegateOptions): Delegation;
  /**
   * Builds a fan-out marker: RETURN it to ask every destination in `queries` at once (see "Fan-out" above). Throws
   * INVALID_ARGUMENT on an empty list, a bad destination, or a correlation id repeated (in the list, or among
   * `work.resume.outstanding`).
   */
  delegateAll(queries: readonly SubQueryRequest[], options?: DelegateAllOptions): Delegation;
  /**
   * Builds the marker that keeps waiting: RETURN it from a resumed turn to take the next outstanding REPLY with a
   * new checkpoint `state`. Throws INVALID_ARGUMENT when nothing is outstanding (return the final output instead).
   */
  awaitMore(state?: unknown): Delegation;
  /**
   * Reads a delegate's output (e.g. `work.resume.reply.resultRef`). The REPLY that woke this turn carries its own
   * delegate's output when it fits in the bus payload cap, so reading that needs no store; any other reference (an
   * earlier reply's, or one over the cap) goes to the harness's result reader, through this tenant's scope, and fails
   * FAILED_PRECONDITION where there is none (a worker without a database: keep what a later turn needs in `state`).
   */
  readResult(ref: string): Promise<unknown>;
  /**
   * Posts `text` to the task's reply address with the tenant's connection — governed (`origin_reply`), audited,
   * bounded — and resolves with the outcome: `sent` (with the permalink), `failed`, `unknown` (may have been
   * posted; never re-sent), `refused` (with the code, e.g. `no_reply_address`, `secret_detected`, or
   * `reply_not_allowed` from an attempt that was retried, a step no longer in flight, or after the grace window)
   * or `parked` (the tenant's policy wants an approval; it is posted once approved). Never pass an address: there
   * is none to pass. Without a reply database in the harness options it fails FAILED_PRECONDITION.
   */
  reply(text: string, options?: ReplyOptions): Promise<ReplyOutcome>;
}

/**
 * A worker's code: runs one turn of a step and returns its output (`Output`, JSON), or a delegation marker from
 * `ctx.delegate` / `ctx.delegateAll` / `ctx.awaitMore`. Throwing fails the attempt: a `NonRetryableError` (or a
 * SwitchyardError with INVALID_ARGUMENT) fails the step at once, anything else is retried as the step allows.
 */
export type Handler<Input = unknown, Output = unknown> = (work: Work<Input>, ctx: HandlerContext) => Promise<Output | Delegation> | Output | Delegation;

/**
 * A handler of any input type, as the harness takes it: `Work<never>` accepts every `Handler<Input, Output>`
 * (parameters are contravariant). The harness cannot know the type; a step's input schema is what checks it.
 */
export type AnyHandler = Handler<never, unknown>;

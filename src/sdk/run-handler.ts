/**
 * `runHandler`: runs a handler against a fake context — no Redis, no Postgres, no coordinator — the way the harness
 * would, turn by turn, including delegation round trips.
 *
 * What it keeps from the real harness, because a unit test that passes here must not fail in production:
 * - the same delegation markers (one marker per turn, correlation ids, `awaitMore` only while something is awaited);
 * - the same usage checks (`ctx.usage` refuses what the harness refuses);
 * - JSON at every boundary: the input, the checkpoint `state`, delegate outputs and the final output are passed
 *   through JSON and the payload size cap, so a `Date` or a `Map` in them looks here as it would after the bus;
 * - a REPLY per sub-query, one resumed turn at a time, with `outstanding` as the coordinator computes it.
 * What it does not model: retries, timeouts, governance, and replies arriving out of the order asked (the
 * coordinator hands them over as they arrive; here they arrive in the order asked). Use `createTestStack` for those.
 */
import { randomUUID } from "node:crypto";
import { formatDestination, type Destination } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { createDelegationMarkers } from "../harness/delegation-markers.js";
import { encodeJsonPayload } from "../harness/envelopes.js";
import { errorInfoOf } from "../harness/error-info.js";
import { addUsage, type UsageTotals } from "../harness/handler-usage.js";
import { formatStepResultRef } from "../harness/result-reader.js";
import type { Handler, HandlerContext, Reply, ReplyOptions, ReplyOutcome, Work } from "../harness/types.js";
import { silentLogger, type Logger } from "../logger.js";

/** The harness's default payload cap (SWITCHYARD_MAX_PAYLOAD_BYTES). */
const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;
/** A handler that keeps delegating forever is a bug the test should show, not hang on. */
const DEFAULT_MAX_TURNS = 100;

/** The work to run: `input` is required, every other field has a plausible default. */
export type WorkFixture<Input> = Partial<Omit<Work<Input>, "input" | "resume">> & { input: Input };

/** One sub-query the handler asked, as `delegateReply` is handed it. */
export interface DelegatedQuery {
  /** `role:NAME`, `team:NAME` or `foreign:KEY`. */
  to: string;
  destination: Destination;
  payload: unknown;
  correlationId: string;
  /** The turn that asked it (0 for the first). */
  turn: number;
}

export interface RunHandlerOptions {
  /** Called on every `ctx.heartbeat()`. */
  onHeartbeat?: (beat: { turn: number; count: number }) => void | Promise<void>;
  /** Becomes `ctx.signal`: abort it to see how the handler gives up (a shutdown, to the real harness). */
  abort?: AbortSignal;
  /**
   * Answers a sub-query: return the delegate's output (a REPLY with status `ok`, its output readable through
   * `ctx.readResult(reply.resultRef)`), or throw to answer with status `error` (the code and message are what the
   * harness would report for that throw: a `NonRetryableError`'s code, a SwitchyardError's, else HANDLER_FAILED).
   * Without it, a handler that delegates fails the run.
   */
  delegateReply?: (query: DelegatedQuery) => unknown;
  /** Answers `ctx.reply(text)`. @defaultValue `sent`, or `refused` / `no_reply_address` when `work.replyTo` is null */
  reply?: (text: string, options: ReplyOptions) => ReplyOutcome | Promise<ReplyOutcome>;
  /** Stored results `ctx.readResult(ref)` can read besides the delegates' outputs, by reference. */
  results?: Readonly<Record<string, unknown>>;
  /** BUS_ROUTED for the handler's queue; false makes `ctx.delegate` fail the turn. @defaultValue true */
  routed?: boolean;
  /** @defaultValue a silent logger */
  logger?: Logger;
  /** @defaultValue 1 MiB, the harness's default */
  maxPayloadBytes?: number;
  /** @defaultValue 100 */
  maxTurns?: number;
}

/** One turn as it ran. */
export interface TurnRecord {
  turn: number;
  /** The correlation id of the REPLY this turn was resumed with; absent on the first turn. */
  resumedBy?: string;
  /** `delegated` covers `ctx.awaitMore` too (a stand-down asking nothing new). */
  outcome: "completed" | "delegated";
  /** Sub-queries this turn asked. */
  asked: DelegatedQuery[];
  usage: UsageTotals;
}

export interface HandlerRun<Output> {
  /** The final output, as the coordinator would store it (after JSON). */
  output: Output;
  turns: TurnRecord[];
  /** Summed over every turn. */
  usage: UsageTotals;
  heartbeats: number;
  /** Every sub-query asked, in order. */
  queries: DelegatedQuery[];
  /** The REPLYs handed to resumed turns, in order. */
  replies: Reply[];
  /** Correlation ids still outstanding when the handler returned its output: the coordinator records them as orphans. */
  orphans: string[];
  /** Texts posted with `ctx.reply`, in order. */
  posted: string[];
}

function invalid(message: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.InvalidArgument, message);
}

/** JSON and back, under the cap: what a value looks like on the far side of the bus. */
function throughJson(value: unknown, maxPayloadBytes: number, what: string): unknown {
  const { data } = encodeJsonPayload(value ?? null, maxPayloadBytes, what);
  return JSON.parse(Buffer.from(data).toString("utf8")) as unknown;
}

function baseWork<Input>(fixture: WorkFixture<Input>, maxPayloadBytes: number): Work<Input> {
  if (typeof fixture !== "object" || fixture === null || !("input" in fixture)) throw invalid("runHandler(handler, work): work must be an object with an `input`");
  return {
    orgId: fixture.orgId ?? "test-org",
    taskId: fixture.taskId ?? randomUUID(),
    stepId: fixture.stepId ?? "step",
    attempt: fixture.attempt ?? 1,
    envelopeId: fixture.envelopeId ?? randomUUID(),
    depth: fixture.depth ?? 0,
    turn: fixture.turn ?? 0,
    clearanceFloor: fixture.clearanceFloor ?? 0,
    input: throughJson(fixture.input, maxPayloadBytes, "work input") as Input,
    replyTo: fixture.replyTo ?? null,
  };
}

/**
 * Runs `handler` on `work` until it returns its output, answering each delegation through `options.delegateReply`.
 * Resolves with the output and what happened on the way; rejects with whatever the handler threw (see
 * `errorInfoOf` for how the harness would report it) or INVALID_ARGUMENT for what the harness would refuse.
 */
export async function runHandler<Input, Output>(handler: Handler<Input, Output>, work: WorkFixture<Input>, options: RunHandlerOptions = {}): Promise<HandlerRun<Output>> {
  if (typeof handler !== "function") throw invalid("runHandler(handler, work): handler must be a function (work, ctx) => output");
  const maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  const maxTurns = options.maxTurns ?? DEFAULT_MAX_TURNS;
  const signal = options.abort ?? new AbortController().signal;
  const logger = options.logger ?? silentLogger;
  const first = baseWork(work, maxPayloadBytes);
  const results = new Map<string, unknown>(Object.entries(options.results ?? {}));
  const run: Omit<HandlerRun<Output>, "output"> = { turns: [], usage: { cost: 0, inputTokens: 0, outputTokens: 0 }, heartbeats: 0, queries: [], replies: [], orphans: [], posted: [] };
  // Sub-queries asked and not yet answered, in the order asked: the next REPLY answers the first.
  const awaited: DelegatedQuery[] = [];
  let delegateCount = 0;
  let current: Work<Input> = first;

  for (;;) {
    if (run.turns.length >= maxTurns) throw invalid(`the handler ran ${maxTurns} turns without returning its output (maxTurns)`);
    const turnUsage: UsageTotals = { cost: 0, inputTokens: 0, outputTokens: 0 };
    const markers = createDelegationMarkers(current, { stream: "role:under-test", routed: () => options.routed ?? true });
    const ctx = fakeContext(current, { signal, logger, turnUsage, markers, results, run, options });
    const value: unknown = await handler(current, ctx);
    const marker = markers.markerOf(value);
    addUsage(run.usage, turnUsage);
    const record: TurnRecord = { turn: current.turn, ...(current.resume ? { resumedBy: current.resume.reply.correlationId } : {}), outcome: marker ? "delegated" : "completed", asked: [], usage: turnUsage };
    run.turns.push(record);

    if (!marker) {
      const output = throughJson(value, maxPayloadBytes, "handler output") as Output;
      run.orphans = awaited.map((q) => q.correlationId);
      return { output, ...run };
    }
    const state = throughJson(marker.state, maxPayloadBytes, "delegation state");
    for (const query of marker.queries) {
      const asked: DelegatedQuery = { to: formatDestination(query.destination), destination: query.destination, payload: throughJson(query.payload, maxPayloadBytes, "delegation payload"), correlationId: query.correlationId, turn: current.turn };
      record.asked.push(asked);
      run.queries.push(asked);
      awaited.push(asked);
    }
    const next = awaited.shift();
    if (!next) throw invalid("the handler stood its turn down with nothing outstanding"); // markers refuse this; a guard, not a path
    if (!options.delegateReply) throw invalid(`the handler delegated to ${next.to} but runHandler has no delegateReply option to answer it`);
    delegateCount += 1;
    const reply = await answer(next, options.delegateReply, first, delegateCount, results, maxPayloadBytes);
    run.replies.push(reply);
    current = { ...first, envelopeId: randomUUID(), turn: current.turn + 1, resume: { state, reply, outstanding: awaited.map((q) => q.correlationId) } };
  }
}

/** Asks `delegateReply` for one sub-query's answer and turns it into the REPLY the coordinator would send. */
async function answer(query: DelegatedQuery, delegateReply: NonNullable<RunHandlerOptions["delegateReply"]>, origin: Work<unknown>, n: number, results: Map<string, unknown>, maxPayloadBytes: number): Promise<Reply> {
  const sourceStepId = `${origin.stepId}.d${n}`;
  const resultRef = formatStepResultRef({ taskId: origin.taskId, stepId: sourceStepId });
  const base = { correlationId: query.correlationId, sourceStepId, resultRef, depth: origin.depth + 1 };
  try {
    const output = await delegateReply(query);
    results.set(resultRef, throughJson(output, maxPayloadBytes, `the reply to ${query.correlationId}`));
    return { status: "ok", ...base };
  } catch (error) {
    const info = errorInfoOf(error);
    return { status: "error", ...base, error: { code: info.code, message: info.message } };
  }
}

interface ContextParts {
  signal: AbortSignal;
  logger: Logger;
  turnUsage: UsageTotals;
  markers: ReturnType<typeof createDelegationMarkers>;
  results: Map<string, unknown>;
  run: Omit<HandlerRun<unknown>, "output">;
  options: RunHandlerOptions;
}

function fakeContext(work: Work<unknown>, parts: ContextParts): HandlerContext {
  const { signal, markers, results, run, options } = parts;
  const cancelled = () => new SwitchyardError(ErrorCode.Cancelled, "the turn was abandoned");
  return {
    signal,
    logger: parts.logger.child({ orgId: work.orgId, taskId: work.taskId, stepId: work.stepId, envelopeId: work.envelopeId }),
    async heartbeat() {
      if (signal.aborted) throw cancelled();
      run.heartbeats += 1;
      await options.onHeartbeat?.({ turn: work.turn, count: run.heartbeats });
    },
    usage(report) {
      addUsage(parts.turnUsage, report);
    },
    delegate: markers.delegate,
    delegateAll: markers.delegateAll,
    awaitMore: markers.awaitMore,
    async readResult(ref) {
      if (!results.has(ref)) throw new SwitchyardError(ErrorCode.NotFound, `no stored result ${JSON.stringify(ref)} (a delegate that failed has none)`, { details: { ref } });
      return results.get(ref);
    },
    async reply(text, replyOptions = {}) {
      if (signal.aborted) throw cancelled();
      if (typeof text !== "string") throw invalid("reply text must be a string");
      run.posted.push(text);
      if (options.reply) return options.reply(text, replyOptions);
      if (work.replyTo === null) return { status: "refused", code: "no_reply_address", replyId: randomUUID() };
      return { status: "sent", replyId: randomUUID() };
    },
  };
}

/**
 * The fan-out crash test's orchestrator (role `fanout-orchestrator`): asks the three specialists at once, takes
 * their replies one turn each (awaiting the rest with its state), and on the last one reads the answers through
 * `ctx.readResult` and completes. Every turn logs its start and end to the side-effect log, so the test can tell
 * which replies were handled, how often, and whether two turns of one step ever ran at once.
 */
import type { Handler, Reply } from "../../../src/harness/index.js";
import {
  announceLoaded,
  appendTurnLine,
  COST,
  failingSpecialist,
  nowMs,
  sleep,
  SPECIALISTS,
  specialistRole,
  type OrchestratorOutput,
  type SpecialistAnswer,
  type SpecialistQuery,
  type TurnLine,
} from "./workload.js";

/** What the orchestrator carries from turn to turn: each reply seen so far, in the order seen. */
interface Checkpoint {
  // Each answer is read in the turn its REPLY wakes (the REPLY carries it; a harness holds no database) and kept here.
  seen: Array<Pick<Reply, "correlationId" | "status" | "resultRef"> & { error?: string; answer?: SpecialistAnswer }>;
}

// Long enough that a kill often lands inside a turn, short enough that 40 tasks finish briskly.
const MAX_TURN_DELAY_MS = 120;

const orchestrator: Handler = async (work, ctx) => {
  const taskIndex = (work.input as { task: { i: number } }).task.i;
  const line: TurnLine = {
    phase: "start",
    turnKey: `${process.pid}/${work.envelopeId}`,
    taskId: work.taskId,
    stepId: work.stepId,
    attempt: work.attempt,
    turn: work.turn,
    kind: work.resume ? "resume" : "initial",
    reply: work.resume?.reply.correlationId ?? null,
    pid: process.pid,
    startMs: nowMs(),
  };
  appendTurnLine(line);
  await sleep(Math.random() * MAX_TURN_DELAY_MS);
  const outcome = await decide(taskIndex, work.resume, ctx);
  appendTurnLine({ ...line, phase: "end", endMs: nowMs() });
  return outcome;
};

async function decide(taskIndex: number, resume: Parameters<Handler>[0]["resume"], ctx: Parameters<Handler>[1]): Promise<unknown> {
  if (!resume) {
    ctx.usage({ cost: COST.orchestratorInitial });
    const queries = SPECIALISTS.map((specialist) => {
      const payload: SpecialistQuery = { taskIndex, specialist, fail: specialist === failingSpecialist(taskIndex) };
      return { to: `role:${specialistRole(specialist)}`, payload, correlationId: specialist };
    });
    const initial: Checkpoint = { seen: [] };
    return ctx.delegateAll(queries, { state: initial });
  }
  const { reply, outstanding } = resume;
  const checkpoint = resume.state as Checkpoint;
  const seen: Checkpoint["seen"] = [
    ...checkpoint.seen,
    {
      correlationId: reply.correlationId,
      status: reply.status,
      resultRef: reply.resultRef,
      ...(reply.status === "ok" ? { answer: (await ctx.readResult(reply.resultRef)) as SpecialistAnswer } : {}),
      ...(reply.error ? { error: `${reply.error.code}: ${reply.error.message}` } : {}),
    },
  ];
  if (outstanding.length > 0) {
    ctx.usage({ cost: COST.orchestratorAwaitMore });
    return ctx.awaitMore({ seen } satisfies Checkpoint);
  }
  ctx.usage({ cost: COST.orchestratorFinal });
  const output: OrchestratorOutput = { taskIndex, replies: seen.map((s) => s.correlationId), answers: {}, errors: {} };
  for (const s of seen) {
    if (s.status === "ok") output.answers[s.correlationId] = s.answer!;
    else output.errors[s.correlationId] = s.error ?? "(no error given)";
  }
  return output;
}

announceLoaded();

export default orchestrator;

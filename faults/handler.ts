/**
 * The workers' handler: records every execution — start and finish, with step, attempt, the WORK envelope id and
 * the pid — in a file per process before and after a small random amount of work, so the suite can count
 * executions per step attempt even for turns whose process was killed or whose RESULT was lost.
 *
 * The orchestrator workflow's step (`o`) runs the same way but fans out: its first turn asks `role:branch` three
 * sub-queries at once, each REPLY resumes it for one turn (recorded with the `reply` it handles), and the last
 * one completes it with the correlation ids in the order they arrived — which the checks compare with the
 * delegates the coordinator recorded: each once, none lost.
 *
 * A harness loads a handler module by path, so the suite writes a two-line module into its run directory that
 * calls `recordingHandler` with that run's options (`writeHandlerModule`): no environment variables involved.
 */
import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Handler, HandlerContext, Work } from "../src/harness/index.js";

/** The orchestrator workflow's step id, and the correlation ids its handler asks `role:branch` under. */
export const ORCHESTRATOR_STEP = "o";
export const SUB_QUERIES = ["q1", "q2", "q3"] as const;

export interface RecordingOptions {
  /** Directory of the execution records (`<pid>.jsonl`). */
  dir: string;
  /** Work time per execution, drawn uniformly from [min, max] ms. */
  workMs: readonly [number, number];
}

/** One line of an execution record. `needs`: the needed steps whose outputs the input carried. */
export interface ExecutionRecord {
  phase: "start" | "end";
  pid: number;
  at: number;
  org: string;
  task: string;
  step: string;
  attempt: number;
  work: string;
  needs?: string[];
  /** Set for an orchestrator turn resumed by a REPLY (`work` is then the REPLY envelope): its correlation id. */
  reply?: string;
}

/** The orchestrator step's output. */
export interface OrchestratorOutput {
  step: string;
  attempt: number;
  /** Correlation ids of the replies, in the order they resumed the step. */
  replies: string[];
}

export function recordingHandler(options: RecordingOptions): Handler {
  const file = join(options.dir, `${process.pid}.jsonl`);
  // One write per line with O_APPEND: a kill -9 leaves whole lines (at worst the last one torn, which the reader skips).
  const record = (line: ExecutionRecord) => appendFileSync(file, `${JSON.stringify(line)}\n`);
  return async (work, ctx) => {
    const input = work.input as { steps?: Record<string, unknown> } | null;
    const reply = work.resume?.reply.correlationId;
    const base = { pid: process.pid, org: work.orgId, task: work.taskId, step: work.stepId, attempt: work.attempt, work: work.envelopeId, ...(reply ? { reply } : {}) };
    record({ phase: "start", at: Date.now(), ...base, needs: Object.keys(input?.steps ?? {}).sort() });
    const [min, max] = options.workMs;
    await new Promise((resolve) => setTimeout(resolve, min + Math.random() * (max - min)));
    ctx.usage({ cost: 0.1 });
    const outcome = work.stepId === ORCHESTRATOR_STEP ? orchestrate(work, ctx) : { step: work.stepId, attempt: work.attempt, pid: process.pid };
    record({ phase: "end", at: Date.now(), ...base });
    return outcome;
  };
}

/** One orchestrator turn: fan out, keep waiting, or complete with the replies in the order they came. */
function orchestrate(work: Work, ctx: HandlerContext): unknown {
  if (!work.resume) {
    const queries = SUB_QUERIES.map((correlationId) => ({ to: "role:branch", payload: { from: work.stepId }, correlationId }));
    return ctx.delegateAll(queries, { state: { replies: [] } });
  }
  const replies = [...(work.resume.state as { replies: string[] }).replies, work.resume.reply.correlationId];
  if (work.resume.outstanding.length > 0) return ctx.awaitMore({ replies });
  const output: OrchestratorOutput = { step: work.stepId, attempt: work.attempt, replies };
  return output;
}

/** Writes the module a harness loads with `--handler` and returns its path. */
export function writeHandlerModule(runDir: string, options: RecordingOptions): string {
  const path = join(runDir, "handler.mts");
  const source = new URL("./handler.ts", import.meta.url).pathname;
  writeFileSync(path, `import { recordingHandler } from ${JSON.stringify(source)};\nexport default recordingHandler(${JSON.stringify(options)});\n`);
  return path;
}

/**
 * The fan-out crash test's workload, shared by its handlers (run in child harness processes) and the test that
 * checks what they did: which specialists an orchestrator asks, which one fails for a task, what each turn costs,
 * and the side-effect log every orchestrator turn writes to.
 */
import { appendFileSync } from "node:fs";

/** Each is a role (`role:fanout-NAME`) and the correlation id the orchestrator asks it under. */
export const SPECIALISTS = ["alpha", "beta", "gamma"] as const;
export type Specialist = (typeof SPECIALISTS)[number];

export const ORCHESTRATOR_ROLE = "fanout-orchestrator";
export const specialistRole = (name: Specialist): string => `fanout-${name}`;

/** Costs each turn reports through `ctx.usage`, distinct so a doubled or missing one shows in the task's cost. */
export const COST = {
  orchestratorInitial: 0.2,
  orchestratorAwaitMore: 0.03,
  orchestratorFinal: 0.05,
  specialistOk: 0.1,
  specialistFailed: 0.07,
} as const;

/** What one task costs when every hop ran once: 1 initial turn, 2 awaitMore turns, 1 final turn, 2 ok + 1 failed specialist. */
export const TASK_COST =
  COST.orchestratorInitial + 2 * COST.orchestratorAwaitMore + COST.orchestratorFinal + 2 * COST.specialistOk + COST.specialistFailed;

/** Deterministic per task, so the expected output is known: task i's failing specialist. */
export function failingSpecialist(taskIndex: number): Specialist {
  return SPECIALISTS[taskIndex % SPECIALISTS.length]!;
}

export interface SpecialistQuery {
  taskIndex: number;
  specialist: Specialist;
  fail: boolean;
}

export interface SpecialistAnswer {
  specialist: Specialist;
  answer: string;
}

/** The orchestrator's final output. */
export interface OrchestratorOutput {
  taskIndex: number;
  /** Correlation ids in the order their replies woke the orchestrator. */
  replies: string[];
  answers: Record<string, SpecialistAnswer>;
  errors: Record<string, string>;
}

/** The env var naming the JSONL file orchestrator turns append to. */
export const SIDE_EFFECT_LOG_ENV = "FANOUT_SIDE_EFFECT_LOG";

/**
 * One line per turn start and one per turn end (same `turnKey`): a turn whose process was killed leaves a start
 * without an end.
 */
export interface TurnLine {
  phase: "start" | "end";
  /** pid + the incoming envelope id: pairs a start with its end. */
  turnKey: string;
  taskId: string;
  stepId: string;
  attempt: number;
  turn: number;
  kind: "initial" | "resume";
  /** The correlation id of the REPLY this turn handles (resume turns). */
  reply: string | null;
  pid: number;
  startMs: number;
  endMs?: number;
}

/** Wall-clock ms with sub-ms resolution, comparable across processes on one machine. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

export function appendTurnLine(line: TurnLine): void {
  const path = process.env[SIDE_EFFECT_LOG_ENV];
  if (!path) throw new Error(`${SIDE_EFFECT_LOG_ENV} is not set: the orchestrator has nowhere to log its turns`);
  // One write per line with O_APPEND: lines from several processes interleave but never tear.
  appendFileSync(path, `${JSON.stringify(line)}\n`);
}

/**
 * Called when a handler module loads, just before its harness starts reading: the test starts tasks only once every
 * harness process has, since ten processes booting on a small box can take longer than a step timeout.
 */
export function announceLoaded(): void {
  const path = process.env[SIDE_EFFECT_LOG_ENV];
  if (path) appendFileSync(`${path}.loaded`, `${process.pid}\n`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Reads the orchestrators' side-effect log back and checks it against the invariants of fan-out under crashes:
 * per step, the completed turns are one initial turn and one per reply, each reply handled to completion once, and
 * no two completed turns of a step overlap in time. A turn may legitimately run twice when the process running it
 * was SIGKILLed after the handler finished but before the outcome was acknowledged (delivery is at-least-once):
 * such a repeat is excused only when the earlier run's process died before the repeat started, and is counted.
 */
import { readFileSync } from "node:fs";
import type { TurnLine } from "./workload.js";

export interface CompletedTurn extends TurnLine {
  endMs: number;
}

export interface StepTurns {
  taskId: string;
  stepId: string;
  attempt: number;
  /** Completed turns in start order. */
  completed: CompletedTurn[];
  /** Turns that started and never ended (their process was killed). */
  partial: TurnLine[];
}

export function readTurnLog(path: string): TurnLine[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as TurnLine);
}

/** Groups the log per step attempt, pairing each start with its end. */
export function turnsByStepAttempt(lines: readonly TurnLine[]): Map<string, StepTurns> {
  const ends = new Map(lines.filter((l) => l.phase === "end").map((l) => [l.turnKey, l]));
  const byStep = new Map<string, StepTurns>();
  for (const start of lines.filter((l) => l.phase === "start")) {
    const key = stepAttemptKey(start.taskId, start.stepId, start.attempt);
    let entry = byStep.get(key);
    if (!entry) byStep.set(key, (entry = { taskId: start.taskId, stepId: start.stepId, attempt: start.attempt, completed: [], partial: [] }));
    const end = ends.get(start.turnKey);
    if (end?.endMs !== undefined) entry.completed.push({ ...start, endMs: end.endMs });
    else entry.partial.push(start);
  }
  for (const entry of byStep.values()) entry.completed.sort((a, b) => a.startMs - b.startMs);
  return byStep;
}

export function stepAttemptKey(taskId: string, stepId: string, attempt: number): string {
  return `${taskId}/${stepId}#${attempt}`;
}

/** Which reply a turn handled: `initial` for the first turn. */
export function turnIdentity(turn: Pick<TurnLine, "kind" | "reply">): string {
  return turn.kind === "initial" ? "initial" : `reply:${turn.reply}`;
}

export interface TurnCheck {
  /** Violations, each a sentence naming the step and the turns. Empty: the step is fine. */
  problems: string[];
  /** Completed turns run again after a kill (excused). */
  excusedRepeats: number;
  /** Reply ids in the order their first completed turn started. */
  replyOrder: string[];
}

/**
 * `deathMsByPid`: when each SIGKILLed process was seen gone. `expectedReplies`: the correlation ids the step
 * waited for.
 */
export function checkStepTurns(step: StepTurns, expectedReplies: readonly string[], deathMsByPid: ReadonlyMap<number, number>): TurnCheck {
  const problems: string[] = [];
  const name = `${step.taskId}/${step.stepId} attempt ${step.attempt}`;
  const byIdentity = new Map<string, CompletedTurn[]>();
  for (const turn of step.completed) {
    const list = byIdentity.get(turnIdentity(turn)) ?? [];
    list.push(turn);
    byIdentity.set(turnIdentity(turn), list);
  }
  const wanted = ["initial", ...expectedReplies.map((id) => `reply:${id}`)].sort();
  const got = [...byIdentity.keys()].sort();
  if (JSON.stringify(got) !== JSON.stringify(wanted)) problems.push(`${name}: completed turns ${got.join(", ")}, expected ${wanted.join(", ")}`);

  // A repeat is excused when the run before it was in a process that died before the repeat started. Either run
  // of an excused repeat may be the redundant one (the killed run's outcome may or may not have been published),
  // so an overlap involving either is excused too; every other overlap is a violation.
  const repeated = new Set<string>();
  let excusedRepeats = 0;
  for (const [identity, runs] of byIdentity) {
    for (let i = 1; i < runs.length; i++) {
      const earlier = runs[i - 1]!;
      const died = deathMsByPid.get(earlier.pid);
      if (died !== undefined && died >= earlier.endMs && died <= runs[i]!.startMs) {
        repeated.add(identity);
        excusedRepeats++;
      } else {
        problems.push(`${name}: ${identity} completed ${runs.length} times (pids ${runs.map((r) => r.pid).join(", ")}); run ${i + 1} was not preceded by a kill of pid ${earlier.pid}`);
      }
    }
  }
  for (let i = 0; i < step.completed.length; i++) {
    for (let j = i + 1; j < step.completed.length; j++) {
      const a = step.completed[i]!;
      const b = step.completed[j]!;
      if (b.startMs >= a.endMs) continue;
      if (repeated.has(turnIdentity(a)) || repeated.has(turnIdentity(b))) continue;
      problems.push(
        `${name}: ${turnIdentity(a)} (pid ${a.pid}, ${a.startMs.toFixed(1)}–${a.endMs.toFixed(1)}) overlaps ${turnIdentity(b)} (pid ${b.pid}, ${b.startMs.toFixed(1)}–${b.endMs.toFixed(1)})`,
      );
    }
  }
  const replyOrder: string[] = [];
  for (const turn of step.completed) if (turn.kind === "resume" && !replyOrder.includes(turn.reply!)) replyOrder.push(turn.reply!);
  return { problems, excusedRepeats, replyOrder };
}

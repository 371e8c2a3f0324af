/**
 * Fan-out under crashes (issue 14): two coordinator processes and two harness processes per role (an orchestrator
 * and three specialists) while 40 tasks each fan out to the three specialists — random delays, one failing
 * specialist per task — and every process kind is SIGKILLed mid-run, several times, and restarted. Afterwards:
 * every task completed with all three replies seen once, in the order the coordinator applied the delegates'
 * results; from the orchestrators' side-effect log, each reply handled to completion once and no two completed
 * turns of a step overlapping; from the audit table, one result per step, one delivered REPLY per delegate, no
 * doubled cost; no dead letters; the chain verifies; the outbox drains.
 */
import { seededRandom } from "../../faults/random.js";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streamKey } from "../../src/bus/keys.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { TEST_BUS_SECRET_ENV } from "../support/bus-auth.js";
import { FLAGS_ON_ENV } from "../support/env.js";
import { kill, spawnCli, type ManagedProcess } from "../support/processes.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { readTasksState, waitForProgress, waitForTasks } from "../support/wait.js";
import { checkStepTurns, readTurnLog, stepAttemptKey, turnsByStepAttempt } from "./fan-out/turn-log.js";
import {
  failingSpecialist,
  nowMs,
  ORCHESTRATOR_ROLE,
  SIDE_EFFECT_LOG_ENV,
  SPECIALISTS,
  specialistRole,
  TASK_COST,
  type OrchestratorOutput,
} from "./fan-out/workload.js";

const ORG = "fanout-crash";
const TASKS = 40;
const KILL_ROUNDS = 9;
// One batch before the kills and one before each round, so every kill lands on freshly started work.
const TASKS_PER_ROUND = Math.floor(TASKS / (KILL_ROUNDS + 1));
const QUEUES = [ORCHESTRATOR_ROLE, ...SPECIALISTS.map(specialistRole)];
// Generous timeouts: a killed turn is reclaimed from the dead consumer within SWITCHYARD_RECLAIM_IDLE_MS, so no
// timeout is needed to recover. A delegate gets one attempt; if it timed out the orchestrator would see an error
// reply for a specialist that did not fail, so any timeout here means a message was lost and fails the test.
const STEP_TIMEOUT_MS = 30_000;

type Kind = "coordinator" | "orchestrator" | "specialist";
const KINDS: readonly Kind[] = ["coordinator", "orchestrator", "specialist"];


describe("fan-out crash test", () => {
  let rt: TestRuntime;
  let logDir: string;
  let logPath: string;
  let env: Record<string, string>;
  const processes = new Map<string, ManagedProcess>();
  const startedCoordinators = new WeakSet<ManagedProcess>();
  /** When each SIGKILLed process was seen gone, by pid: a turn it finished may legitimately run again after. */
  const deathMsByPid = new Map<number, number>();
  /** `name pid at-ms` of each kill, for failure messages. */
  const killLog: string[] = [];

  beforeAll(async () => {
    rt = await createTestRuntime();
    logDir = mkdtempSync(join(tmpdir(), "switchyard-fanout-crash-"));
    logPath = join(logDir, "turns.jsonl");
    env = {
      ...FLAGS_ON_ENV,
      DATABASE_URL: rt.config.databaseUrl,
      REDIS_URL: rt.config.redisUrl,
      SWITCHYARD_KEY_PREFIX: rt.prefix,
      SWITCHYARD_BUS_SECRET: TEST_BUS_SECRET_ENV,
      SWITCHYARD_LOG_LEVEL: "warn",
      SWITCHYARD_STEP_TIMEOUT_MS: String(STEP_TIMEOUT_MS),
      SWITCHYARD_RECLAIM_IDLE_MS: "1500",
      SWITCHYARD_HEARTBEAT_MS: "500",
      SWITCHYARD_SWEEP_INTERVAL_MS: "200",
      SWITCHYARD_OUTBOX_STALE_MS: "500",
      SWITCHYARD_BLOCK_MS: "200",
      SWITCHYARD_SHUTDOWN_GRACE_MS: "500",
      [SIDE_EFFECT_LOG_ENV]: logPath,
    };
    await submitWorkflow(
      rt.pool,
      ORG,
      parseWorkflowDefinition(`
name: fan-out
steps:
  - { id: orchestrate, to: "role:${ORCHESTRATOR_ROLE}", retries: 3, backoff: 100ms, timeout: ${STEP_TIMEOUT_MS / 1000}s }
`),
    );
  });

  afterAll(async () => {
    await Promise.all([...processes.values()].map((p) => kill(p)));
    await rt.cleanup();
    rmSync(logDir, { recursive: true, force: true });
  });

  /** Names: coordinator-0/1, fanout-orchestrator-0/1, fanout-alpha-0/1, … */
  function startProcess(name: string): ManagedProcess {
    const queue = name.replace(/-\d+$/, "");
    const args =
      queue === "coordinator"
        ? ["start", "coordinator"]
        : ["start", "harness", "--role", queue, "--handler", `test/crash/fan-out/${queue === ORCHESTRATOR_ROLE ? "orchestrator" : "specialist"}.ts`, "--concurrency", "8"];
    // A coordinator logs "coordinator started" at info once it serves: the test waits for that after a restart.
    const proc = spawnCli(name, args, queue === "coordinator" ? { ...env, SWITCHYARD_LOG_LEVEL: "info" } : env);
    if (queue === "coordinator") {
      // Watched on the stream itself: the kept output is only the last lines, and info logging scrolls it.
      let tail = "";
      const watch = (chunk: Buffer) => {
        tail = (tail + chunk.toString("utf8")).slice(-400);
        if (tail.includes("coordinator started")) {
          startedCoordinators.add(proc);
          proc.child.stdout!.off("data", watch);
        }
      };
      proc.child.stdout!.on("data", watch);
    }
    processes.set(name, proc);
    return proc;
  }

  const loadedPids = () => (existsSync(`${logPath}.loaded`) ? readFileSync(`${logPath}.loaded`, "utf8").split("\n").map(Number) : []);
  const isReady = (proc: ManagedProcess) =>
    proc.name.startsWith("coordinator") ? startedCoordinators.has(proc) : loadedPids().includes(proc.child.pid!);

  /**
   * Waits until restarted processes serve again. Without this a loaded box can take longer to boot a process than a
   * step timeout, and the next round may kill its sibling meanwhile: a queue with nobody reading it for longer than
   * the timeout retries steps that were never lost. Progress-based: it fails only when none of them gets ready.
   */
  async function waitReady(names: readonly string[]): Promise<void> {
    await waitForProgress({
      what: `${names.join(", ")} to serve again after a restart`,
      progress: async () => names.filter((n) => isReady(processes.get(n)!)).length,
      done: (ready) => ready === names.length,
      stallMs: 240_000,
      describeStuck: (ready) => `${ready} of ${names.length} ready`,
    });
  }

  function namesOf(kind: Kind): string[] {
    const queues = kind === "coordinator" ? ["coordinator"] : kind === "orchestrator" ? [ORCHESTRATOR_ROLE] : SPECIALISTS.map(specialistRole);
    return queues.flatMap((q) => [`${q}-0`, `${q}-1`]);
  }

  const unfinishedSteps = async () =>
    (await rt.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM steps WHERE status NOT IN ('completed', 'failed')")).rows[0]!.n;

  it(`completes ${TASKS} fan-out tasks, each reply applied once and turns serial, through ${KILL_ROUNDS} rounds of SIGKILL`, { timeout: 30 * 60_000 }, async () => {
    const seed = Number(process.env.CRASH_SEED ?? Date.now() % 100_000);
    // Seeded, so a failing run can be reproduced (the seed is printed on failure).
    const rand = seededRandom(seed);
    const context = () => `seed ${seed}\n${[...processes.values()].map((p) => `--- ${p.name} ---\n${p.output().split("\n").slice(-15).join("\n")}`).join("\n")}`;
    const began = Date.now();
    for (const kind of KINDS) for (const name of namesOf(kind)) startProcess(name);
    // Tasks start once every harness has loaded its handler (and the coordinators made their group): ten processes
    // booting on a small box can take longer than a step timeout, which would retry steps that were never lost.
    const harnessPids = () => [...processes.values()].filter((p) => !p.name.startsWith("coordinator")).map((p) => p.child.pid!);
    await waitForProgress({
      what: "every process to boot",
      progress: async () => {
        const loaded = loadedPids();
        const groups = (await rt.redis.xinfo("GROUPS", streamKey(rt.prefix, "coordinator")).catch(() => [])) as unknown[];
        return { harnesses: harnessPids().filter((pid) => loaded.includes(pid)).length, coordinatorGroup: groups.length };
      },
      done: (state) => state.harnesses === harnessPids().length && state.coordinatorGroup > 0,
      // Booting is CPU-bound (tsx compiling the sources): a minute or more for ten processes on a loaded 2-core box.
      stallMs: 240_000,
      describeStuck: (state) => `${JSON.stringify(state)}\n${context()}`,
    });

    let started = 0;
    const startTasks = async (n: number) => {
      for (; n > 0 && started < TASKS; n--) await rt.tasks.start({ orgId: ORG, workflow: "fan-out", input: { i: started++ } });
    };
    // The kills start once the fleet is up and the first task went all the way through.
    await startTasks(TASKS_PER_ROUND);
    // Ten processes starting on a small box take a while; any audit row written is progress.
    await waitForProgress({
      what: "the first task to complete",
      progress: async () => ({
        ...(await readTasksState(rt.pool, ORG)),
        audit: (await rt.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM audit_log")).rows[0]!.n,
      }),
      done: (state) => (state.tasks.completed ?? 0) > 0,
      stallMs: 90_000,
      describeStuck: (state) => `${JSON.stringify(state)}\n${context()}`,
    });

    const inFlightAtKill: number[] = [];
    const killed: string[] = [];
    for (let round = 0; round < KILL_ROUNDS; round++) {
      // New tasks before each kill, so every kill lands on work in flight.
      await startTasks(TASKS_PER_ROUND);
      // Shorter than a task's run (four orchestrator turns around specialists of up to 400 ms): the kill lands mid-task.
      await new Promise((r) => setTimeout(r, 150 + rand() * 350));
      inFlightAtKill.push(await unfinishedSteps());
      // Each kind in turn, a seeded instance of it; now and then a second process of another kind with it.
      const kind = KINDS[round % KINDS.length]!;
      const pick = (k: Kind) => namesOf(k)[Math.floor(rand() * namesOf(k).length)]!;
      const victims = [pick(kind)];
      if (rand() < 0.3) victims.push(pick(KINDS[(round + 1 + Math.floor(rand() * 2)) % KINDS.length]!));
      for (const victim of victims) {
        const proc = processes.get(victim)!;
        await kill(proc);
        deathMsByPid.set(proc.child.pid!, nowMs());
        killLog.push(`${victim} ${proc.child.pid} ${Math.round(nowMs())}`);
        killed.push(victim);
      }
      await new Promise((r) => setTimeout(r, rand() * 500));
      for (const victim of victims) startProcess(victim);
      await waitReady(victims);
    }
    await startTasks(TASKS);
    expect(inFlightAtKill.every((n) => n > 0), `work in flight at each kill: ${inFlightAtKill.join(", ")}`).toBe(true);
    for (const kind of KINDS) expect(killed.filter((v) => namesOf(kind).includes(v)).length, `kills of ${kind}: ${killed.join(", ")}`).toBeGreaterThanOrEqual(2);

    // Fails only once nothing moved for a minute (longer than a reclaim plus a process restart on a loaded box).
    await waitForTasks(rt.pool, { orgId: ORG, expected: TASKS, stallMs: 60_000, intervalMs: 500 }).catch((error) => {
      throw new Error(`${(error as Error).message}\n${context()}`);
    });
    const settledMs = Date.now() - began;
    const { rows: failures } = await rt.pool.query<{ step: string; error: string }>(
      "SELECT task_id || '/' || step_id AS step, error->>'code' || ': ' || (error->>'message') AS error FROM steps WHERE status = 'failed' AND kind <> 'delegation' LIMIT 5",
    );
    const { rows: done } = await rt.pool.query<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM tasks GROUP BY status");
    expect(done, `${failures.map((f) => `${f.step} failed: ${f.error}`).join("\n")}\n${context()}`).toEqual([{ status: "completed", n: TASKS }]);
    const { rows: timeouts } = await rt.pool.query<{ task_id: string; step_id: string; reason: string }>("SELECT task_id, step_id, reason FROM audit_log WHERE action = 'timeout'");
    expect(timeouts, `timeouts (a lost message recovered only by a timeout)\n${await describeTasks(timeouts.map((t) => t.task_id).slice(0, 3))}\nkills: ${killLog.join("; ")}`).toEqual([]);

    await checkOutputsAndTurns(seed);
    await checkAudit();

    for (const stream of ["coordinator", ...QUEUES.map((q) => `role:${q}`)]) {
      expect(await rt.bus.listDeadLetters(stream), `dead letters on ${stream}`).toEqual([]);
    }
    expect(await verifyChain(rt.stores.audit, rt.pool, ORG)).toMatchObject({ ok: true });
    const outbox = await waitForProgress({
      what: "the outbox to drain",
      progress: async () => (await rt.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM outbox")).rows[0]!.n,
      done: (rows) => rows === 0,
      describeStuck: (rows) => `${rows} outbox rows unpublished\n${context()}`,
    });
    expect(outbox).toBe(0);
    console.info(`fan-out crash test, seed ${seed}: ${TASKS} tasks settled in ${(settledMs / 1000).toFixed(1)} s; killed ${killed.join(", ")}; in flight at each kill ${inFlightAtKill.join(", ")}`);
  });

  /** For a failure message: the audit trail and the side-effect log of some tasks, times relative to the first row. */
  async function describeTasks(taskIds: readonly string[]): Promise<string> {
    const lines = readTurnLog(logPath);
    const out: string[] = [];
    for (const taskId of taskIds) {
      const { rows } = await rt.pool.query<{ at_ms: string; step_id: string; action: string; verdict: string; rule: string; reason: string }>(
        "SELECT at_ms, step_id, action, verdict, rule, reason FROM audit_log WHERE task_id = $1 ORDER BY seq",
        [taskId],
      );
      out.push(`task ${taskId}:`, ...rows.map((r) => `  audit ${r.at_ms} ${r.step_id} ${r.action} ${r.verdict} ${r.rule} ${r.reason.slice(0, 100)}`));
      out.push(...lines.filter((l) => l.taskId === taskId).map((l) => `  turn ${l.phase} ${Math.round(l.phase === "end" ? l.endMs! : l.startMs)} attempt ${l.attempt} turn ${l.turn} ${l.kind} ${l.reply ?? ""} pid ${l.pid}`));
    }
    return out.join("\n");
  }

  /**
   * Each orchestrator's output lists the three replies once each, in the order the coordinator applied the
   * delegates' results, with the failing specialist's error and the others' answers; the side-effect log agrees.
   */
  async function checkOutputsAndTurns(seed: number): Promise<void> {
    const { rows: origins } = await rt.pool.query<{ task_id: string; step_id: string; attempt: number; output: OrchestratorOutput }>(
      "SELECT task_id, step_id, attempt, output FROM steps WHERE kind <> 'delegation' ORDER BY task_id",
    );
    expect(origins).toHaveLength(TASKS);
    expect(origins.filter((o) => o.attempt !== 1), "orchestrator steps that needed a second attempt").toEqual([]);
    // The delegates' results in the order the coordinator applied them (audit seq), by origin step.
    const { rows: applied } = await rt.pool.query<{ task_id: string; origin: string; correlation_id: string }>(
      `SELECT a.task_id, s.delegation->>'originStepId' AS origin, s.delegation->>'correlationId' AS correlation_id
       FROM audit_log a JOIN steps s ON s.task_id::text = a.task_id AND s.step_id = a.step_id
       WHERE a.org_id = $1 AND a.action = 'result' AND s.kind = 'delegation' ORDER BY a.seq`,
      [ORG],
    );
    const turns = turnsByStepAttempt(readTurnLog(logPath));
    const problems: string[] = [];
    let excusedRepeats = 0;
    let partialTurns = 0;
    for (const origin of origins) {
      const out = origin.output;
      const failing = failingSpecialist(out.taskIndex);
      const receiptOrder = applied.filter((r) => r.task_id === origin.task_id && r.origin === origin.step_id).map((r) => r.correlation_id);
      expect([...out.replies].sort(), `replies seen by ${origin.task_id}`).toEqual([...SPECIALISTS].sort());
      expect(out.replies, `${origin.task_id}: replies in the order the coordinator applied the results`).toEqual(receiptOrder);
      expect(Object.keys(out.errors)).toEqual([failing]);
      expect(out.answers).toEqual(
        Object.fromEntries(SPECIALISTS.filter((s) => s !== failing).map((s) => [s, { specialist: s, answer: `${s} on task ${out.taskIndex}` }])),
      );
      const stepTurns = turns.get(stepAttemptKey(origin.task_id, origin.step_id, origin.attempt));
      if (!stepTurns) {
        problems.push(`${origin.task_id}: no turns in the side-effect log`);
        continue;
      }
      const check = checkStepTurns(stepTurns, SPECIALISTS, deathMsByPid);
      problems.push(...check.problems);
      if (JSON.stringify(check.replyOrder) !== JSON.stringify(out.replies)) problems.push(`${origin.task_id}: turns took replies ${check.replyOrder.join(",")}, output says ${out.replies.join(",")}`);
      excusedRepeats += check.excusedRepeats;
      partialTurns += stepTurns.partial.length;
    }
    expect(problems, `side-effect log (seed ${seed})`).toEqual([]);
    console.info(`side-effect log: ${partialTurns} turns cut short by a kill, ${excusedRepeats} finished turns run again after their process was killed`);
  }

  /** One result per step, one delivered REPLY per delegate, and a task cost of exactly what the handlers reported. */
  async function checkAudit(): Promise<void> {
    const { rows: results } = await rt.pool.query<{ kind: string; verdict: string; n: number; steps: number }>(
      `SELECT s.kind, a.verdict, count(*)::int AS n, count(DISTINCT (a.task_id, a.step_id))::int AS steps
       FROM audit_log a JOIN steps s ON s.task_id::text = a.task_id AND s.step_id = a.step_id
       WHERE a.org_id = $1 AND a.action = 'result' GROUP BY 1, 2 ORDER BY 1, 2`,
      [ORG],
    );
    expect(results).toEqual([
      { kind: "delegation", verdict: "accepted", n: TASKS * 2, steps: TASKS * 2 },
      { kind: "delegation", verdict: "failed", n: TASKS, steps: TASKS },
      { kind: "workflow", verdict: "accepted", n: TASKS, steps: TASKS },
    ]);
    // A delivered REPLY is audited on the origin; each one must follow its own delegate's result (the k-th REPLY
    // of a step after at least k results of its delegates), three per step, and none may be orphaned.
    const { rows: flow } = await rt.pool.query<{ task_id: string; step_id: string; action: string; verdict: string }>(
      "SELECT task_id, step_id, action, verdict FROM audit_log WHERE org_id = $1 AND action IN ('result', 'reply') ORDER BY seq",
      [ORG],
    );
    const delivered = new Map<string, { results: number; replies: number }>();
    const early: string[] = [];
    for (const r of flow) {
      const origin = `${r.task_id}/${r.step_id.replace(/\.d\d+$/, "")}`;
      const counts = delivered.get(origin) ?? { results: 0, replies: 0 };
      delivered.set(origin, counts);
      if (r.action === "result" && r.step_id.includes(".d")) counts.results++;
      if (r.action === "reply") {
        expect(r.verdict, `REPLY row on ${r.task_id}/${r.step_id}`).toBe("allow");
        if (++counts.replies > counts.results) early.push(`${origin}: REPLY ${counts.replies} before its delegate's result`);
      }
    }
    expect(early).toEqual([]);
    expect([...delivered.values()].filter((c) => c.replies !== SPECIALISTS.length || c.results !== SPECIALISTS.length)).toEqual([]);
    expect(delivered.size).toBe(TASKS);
    // Per task: one `query` row per sub-query (the first carrying the turn's cost), one per awaitMore turn.
    const { rows: stoodDown } = await rt.pool.query<{ action: string; verdict: string; rule: string; n: number }>(
      "SELECT action, verdict, rule, count(*)::int AS n FROM audit_log WHERE org_id = $1 AND action IN ('query', 'sub_query') GROUP BY 1, 2, 3 ORDER BY 1, 3",
      [ORG],
    );
    expect(stoodDown).toEqual([
      { action: "query", verdict: "accepted", rule: "builtin:await_more", n: TASKS * (SPECIALISTS.length - 1) },
      { action: "query", verdict: "accepted", rule: "builtin:query", n: TASKS * SPECIALISTS.length },
      { action: "sub_query", verdict: "allow", rule: "builtin:default", n: TASKS * SPECIALISTS.length },
    ]);
    // Task cost = the steps' costs = what the audit rows carry (results and the orchestrator turns that stood down).
    const { rows: costs } = await rt.pool.query<{ id: string; cost: number; steps: number; audited: number }>(
      `SELECT t.id, t.cost, s.cost AS steps, a.cost AS audited FROM tasks t
       JOIN (SELECT task_id, sum(cost) AS cost FROM steps GROUP BY task_id) s ON s.task_id = t.id
       JOIN (SELECT task_id, sum(cost) AS cost FROM audit_log WHERE action IN ('result', 'query') GROUP BY task_id) a ON a.task_id = t.id::text
       WHERE t.org_id = $1`,
      [ORG],
    );
    expect(costs).toHaveLength(TASKS);
    for (const row of costs) {
      expect(row.cost, `cost of task ${row.id}`).toBeCloseTo(TASK_COST, 6);
      expect(row.steps).toBeCloseTo(row.cost, 6);
      expect(row.audited, `audited cost of task ${row.id}`).toBeCloseTo(row.cost, 6);
    }
  }
});

/**
 * `npm run faults` — the fault suite (never part of `npm test`). It brings up its own Redis and PostgreSQL, the
 * Switchyard processes as the deploy runs them, starts a fan-out/fan-in workload through the API, injects faults
 * while the work flows, waits until everything has finished or nothing has moved for the stall window, then
 * checks the outcome from the audit table, the execution records and `audit verify`, prints the report and tears
 * everything down — also on failure and on Ctrl-C. Exit 0: target met; 1: target missed; 2: the suite could not run.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { checkAuditRows } from "./audit-checks.js";
import { checkKeyPeaks } from "./key-checks.js";
import { checkExecutions, readExecutions } from "./execution-checks.js";
import { Fleet } from "./fleet.js";
import { writeHandlerModule } from "./handler.js";
import { expectedFaultSeconds, injectFaults, planFaults, type FaultResult } from "./injector.js";
import { Monitor } from "./monitor.js";
import { freePort, parseOptions, USAGE, type SuiteOptions } from "./options.js";
import { readAudit, readCustomers, readOutcome, verifyChains } from "./outcome.js";
import { seededRandom, sleep } from "./random.js";
import { formatJson, formatReport, missedTargets, type RunReport } from "./report.js";
import { cleanupStale, RUNS_ROOT, startServices, type Services } from "./services.js";
import { fairnessLimits, prepareTenants, ROLES, Starter, submitWorkflow } from "./workload.js";

const TENANTS = ["faults-a", "faults-b"];
const HARNESSES_PER_ROLE = 2;
const KEY_PREFIX = "sy:";
/** Pause before each fault (ms); the work is paced to last about as long as the faults. */
const SPACING: readonly [number, number] = [4_000, 8_000];

async function main(argv: readonly string[]): Promise<number> {
  let options: SuiteOptions | null;
  try {
    options = parseOptions(argv);
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (!options) {
    process.stdout.write(USAGE);
    return 0;
  }
  const runStartedAt = Date.now();
  const log = (line: string) => process.stderr.write(`[${((Date.now() - runStartedAt) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);
  const controller = new AbortController();
  const { signal } = controller;
  let interrupts = 0;
  const onSignal = (name: string) => {
    interrupts += 1;
    if (interrupts > 1) process.exit(130); // a later run cleans up what is left (cleanupStale)
    log(`${name}: stopping and tearing down (again to exit at once)`);
    controller.abort(new Error(`interrupted by ${name}`));
  };
  process.on("SIGINT", () => onSignal("SIGINT"));
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  const limit = setTimeout(() => {
    log(`the run reached --max-minutes ${options.maxMinutes}: stopping`);
    controller.abort(new Error(`time limit of ${options.maxMinutes} min`));
  }, options.maxMinutes * 60_000);
  limit.unref();

  const runDir = join(RUNS_ROOT, String(process.pid));
  const execDir = join(runDir, "executions");
  mkdirSync(execDir, { recursive: true });
  log(`seed ${options.seed}; run directory ${runDir}`);
  let services: Services | undefined;
  let fleet: Fleet | undefined;
  let monitor: Monitor | undefined;
  try {
    await cleanupStale(log);
    services = await startServices({ redisPort: options.redisPort || (await freePort()), pgPort: options.pgPort || (await freePort()), runDir, log });
    const databaseUrl = services.databaseUrl("switchyard");
    const cliEnv = { DATABASE_URL: databaseUrl, REDIS_URL: services.redisUrl, SWITCHYARD_KEY_PREFIX: KEY_PREFIX, SWITCHYARD_LOG_LEVEL: "warn" };
    const keys = await prepareTenants({ tenants: TENANTS, env: cliEnv, ...(options.limits ? { commands: fairnessLimits(TENANTS) } : {}) });
    log(`migrated; tenants ${TENANTS.join(", ")} created${options.limits ? "; dispatch limits set (--limits)" : ""}`);
    const handlerPath = writeHandlerModule(runDir, { dir: execDir, workMs: options.workMs });
    fleet = new Fleet({
      coordinators: options.coordinators,
      harnessesPerRole: HARNESSES_PER_ROLE,
      roles: ROLES,
      handlerPath,
      concurrency: 10,
      redisUrl: services.redisUrl,
      databaseUrl,
      gatewayPort: options.gatewayPort || (await freePort()),
      runDir,
      runStartedAt,
      signal,
      log,
    });
    await fleet.start();
    log(`${options.coordinators} coordinators, ${HARNESSES_PER_ROLE * ROLES.length} harnesses (${ROLES.join(", ")}), gateway ${fleet.gatewayUrl}: running`);
    await submitWorkflow(fleet.gatewayUrl, keys, { keyed: options.limits });
    monitor = new Monitor({ databaseUrl, redisUrl: services.redisUrl, keyPrefix: KEY_PREFIX });
    monitor.start();

    const random = seededRandom(options.seed);
    const plan = options.faults ? planFaults(random, fleet) : [];
    // Spacing plus each fault's action and recovery, so the starts outlast the last fault and every fault lands on
    // work in flight.
    const plannedSeconds = plan.reduce((sum, fault) => sum + (SPACING[0] + SPACING[1]) / 2_000 + expectedFaultSeconds(fault.kind), 0);
    const starter = new Starter({
      gatewayUrl: fleet.gatewayUrl,
      keys,
      total: options.tasks,
      runId: `faults-${options.seed}-${runStartedAt}`,
      concurrency: 8,
      ratePerSec: plan.length ? options.tasks / plannedSeconds : null,
      giveUpMs: 120_000,
      signal,
    });
    const ticker = setInterval(() => {
      const l = monitor!.latest;
      log(`started ${starter.started}/${options.tasks} · tasks finished ${l.finishedTasks}/${l.tasks} · steps completed ${l.completedSteps} · audit rows ${l.auditRows}${l.ok ? "" : " (database not answering)"} · dead letters ${monitor!.deadLetters.size} · unexpected exits ${fleet!.unexpectedExits.length}`);
    }, 5_000);
    const starting = starter.run();
    let faults: FaultResult[] = [];
    if (plan.length) faults = await injectFaults({ plan, fleet, services, monitor, random, runStartedAt, spacingMs: SPACING, recoveryWaitMs: 60_000, signal, log });
    const starts = await starting;
    if (!signal.aborted) log(`${starter.started} tasks started${plan.length ? "; faults done" : ""}; waiting for the work to finish (stuck = nothing moved for ${options.stallSeconds} s)`);
    const settled = await settle(monitor, starter.started, options.stallSeconds, signal);
    clearInterval(ticker);
    log(settled);

    await monitor.collectDeadLetters().catch(() => {});
    await fleet.stop();
    const unexpectedExits = [...fleet.unexpectedExits];
    const { rows, steps } = await readAudit(monitor, TENANTS);
    const audit = checkAuditRows(rows, steps);
    const executions = checkExecutions(readExecutions(execDir), audit.histories);
    const keyPeaks = options.limits ? checkKeyPeaks(rows, await readCustomers(monitor, TENANTS)) : undefined;
    const report: RunReport = {
      setup: { coordinators: options.coordinators, harnessesPerRole: HARNESSES_PER_ROLE, gateways: 1, tasks: options.tasks, faults: options.faults, seed: options.seed },
      durationMs: Date.now() - runStartedAt,
      settled,
      starts: { started: starts.taskIds.size, failed: starts.failed.length, retries: starts.retries, replayed: starts.replayed, errors: Object.fromEntries(starts.errors) },
      tasks: await readOutcome(monitor, TENANTS),
      auditRows: audit.rows,
      doubled: [...audit.violations, ...executions.violations, ...(keyPeaks?.violations ?? [])],
      ...(keyPeaks ? { keyPeak: keyPeaks.peak } : {}),
      unexpectedAuditRows: Object.fromEntries(audit.unexpected),
      executions: { started: executions.started, finished: executions.finished, pids: executions.pids, perAttempt: executions.perAttempt },
      faults,
      deadLetters: [...monitor.deadLetters.values()],
      unexpectedExits,
      chains: await verifyChains(TENANTS, cliEnv),
    };
    // Evidence to read after the services are gone: the whole report, and every audit row of each task found wrong.
    const suspects = new Set([...report.doubled.map((v) => v.task), ...report.tasks.stuck.map((t) => t.task)]);
    writeFileSync(join(runDir, "report.json"), formatJson(report, true));
    writeFileSync(join(runDir, "suspect-audit-rows.jsonl"), rows.filter((r) => suspects.has(r.task_id)).map((r) => JSON.stringify(r)).join("\n"));
    process.stdout.write(`${formatReport(report)}\n(full report, the audit rows of every suspect task and the execution records: ${runDir})\n`);
    if (options.json) process.stdout.write(`${formatJson(report)}\n`);
    if (signal.aborted) return 2;
    return missedTargets(report).length === 0 ? 0 : 1;
  } catch (error) {
    log(`the suite could not run: ${signal.aborted ? (signal.reason as Error).message : (error as Error).stack ?? error}`);
    return 2;
  } finally {
    clearTimeout(limit);
    await fleet?.stop().catch(() => {});
    await monitor?.stop().catch(() => {});
    await services?.teardown();
    log("torn down");
  }
}

/**
 * Waits until every started task has finished, or nothing has moved (completed steps, finished tasks, audit
 * rows) for `stallSeconds`, or the run is aborted. Returns how it ended, for the report.
 */
async function settle(monitor: Monitor, started: number, stallSeconds: number, signal: AbortSignal): Promise<string> {
  let signature = "";
  let movedAt = Date.now();
  for (;;) {
    const l = monitor.latest;
    if (l.ok && l.tasks >= started && l.finishedTasks === l.tasks) return `every task finished`;
    const now = `${l.completedSteps}/${l.finishedTasks}/${l.auditRows}/${l.tasks}`;
    if (now !== signature) {
      signature = now;
      movedAt = Date.now();
    }
    if (Date.now() - movedAt > stallSeconds * 1_000) return `nothing moved for ${stallSeconds} s: what is unfinished is stuck`;
    if (signal.aborted) return `aborted: ${(signal.reason as Error).message}`;
    await sleep(500, signal);
  }
}

// Exit explicitly: the run must end by itself even if a library left a handle open.
process.exit(await main(process.argv.slice(2)));

/**
 * `npm run demo -- orchestrator`: one handler fans out to three specialists and gathers their answers, narrated.
 *
 * A second scenario rather than a change to the main demo: the main demo already shows a delegation, a foreign hop
 * and an approval in four steps; fan-out needs room of its own to be seen — several sub-queries asked in one turn,
 * their replies taken one turn at a time in the order they arrived, the outstanding list shrinking.
 *
 * The example A2A agent (the fact-checker) → a coordinator, the orchestrator, analyst, critic and writer workers
 * and the gateway (for the agent's pushes) → flags and the agent's registration → examples/workflows/
 * orchestrator-demo.yaml → a task: `gather` (examples/handlers/orchestrator.ts) asks `role:analyst`, `role:critic`
 * and `foreign:fact-checker` at once, then `draft` → what the orchestrator saw turn by turn (its own account, in
 * its output), checked against the order the coordinator received the answers (the delegates' `result` audit
 * rows) → every hop from the audit log → the chain.
 */
import { readFile } from "node:fs/promises";
import type { AuditRow } from "../../domain.js";
import type { StepView, TaskView } from "../../tasks/tasks.js";
import { verifyChain } from "../../governance/audit-verify.js";
import { submitWorkflow } from "../../store/workflow-store.js";
import { parseWorkflowDefinition, topologicalOrder } from "../../workflow/definition.js";
import type { TurnNote } from "../../../examples/handlers/orchestrator.js";
import { describeVerification, formatNumber } from "../../cli/output.js";
import { switchOnDemoFlags } from "./demo-flags.js";
import { DEMO_AGENT_KEY, LOOPBACK_NETWORK, registerDemoAgent, startDemoAgent } from "./demo-foreign.js";
import { startDemoStack } from "./demo-stack.js";
import { formatHopsTable } from "./hops-table.js";
import { indent, prepareDemoDatabase, watchNarrated } from "./narration.js";
import { DEMO_ACTOR, type DemoOptions } from "./run-demo.js";
import { assetPath } from "../../package-paths.js";

export const ORCHESTRATOR_WORKFLOW_PATH = assetPath("examples/workflows/orchestrator-demo.yaml");
const ROLES = ["orchestrator", "analyst", "critic", "writer"] as const;
/** The workflow step the orchestrator runs as. */
const ORIGIN_STEP = "gather";

export async function runOrchestratorDemo(options: DemoOptions): Promise<{ ok: boolean; taskId?: string }> {
  const tenant = options.tenant ?? "demo";
  const say = (line = "") => options.print(line);
  say("Switchyard orchestrator demo: one handler asks three specialists at once — two roles and an A2A agent outside");
  say("the perimeter — is woken once per answer, one turn at a time in the order the answers arrive, and finishes with");
  say("what it gathered. Every sub-query is its own governed, audited hop.");
  say();
  await prepareDemoDatabase(options.config.databaseUrl, say);

  say(`2. Starting the "${DEMO_AGENT_KEY}", the example A2A agent (examples/agents/fact-checker.ts), on 127.0.0.1`);
  const agent = await startDemoAgent(options.logger);
  try {
    say(`3. Starting a coordinator, workers for the roles ${ROLES.join(", ")}, and the gateway (for the agent's pushes)`);
    const stack = await startDemoStack({ config: options.config, logger: options.logger, roles: ROLES });
    try {
      const { pool, flags, tasks, stores } = stack.runtime;
      say(`   the egress guard admits ${LOOPBACK_NETWORK} for this run (SWITCHYARD_EGRESS_ALLOWED_NETWORKS)`);
      say(`   ${await switchOnDemoFlags({ pool, flags, tenant, roles: ROLES, delegatingRoles: ["orchestrator"], egress: true, actor: DEMO_ACTOR })}`);
      const registration = await registerDemoAgent(stores.foreignAgents, pool, tenant, agent.baseUrl);
      say(`   ${registration.outcome} foreign agent "${registration.agent.agentKey}" for tenant "${tenant}", egress allowed to ${registration.agent.allowHost} only`);

      const definition = parseWorkflowDefinition(await readFile(ORCHESTRATOR_WORKFLOW_PATH, "utf8"), { format: "yaml" });
      const submitted = await submitWorkflow(pool, tenant, definition);
      say(`4. Submitted examples/workflows/orchestrator-demo.yaml: ${submitted.ref}: ${topologicalOrder(definition).map((s) => s.id).join(" → ")}`);
      const input = { topic: options.topic ?? "governed agent coordination" };
      const started = await tasks.start({ orgId: tenant, workflow: submitted.ref, input });
      say(`5. Task ${started.taskId} with input ${JSON.stringify(input)}; watching it (a line per step change)`);
      const final = await watchNarrated({ tasks, orgId: tenant, taskId: started.taskId, timeoutMs: options.timeoutMs ?? 60_000, signal: options.signal }, say);

      const rows = await stack.runtime.stores.audit.list(pool, tenant, { taskId: final.id, limit: 10_000 });
      const fanIn = narrateFanOut(final, rows, say);
      say("7. The task's audit rows in seq order:");
      say(indent(formatHopsTable(rows)));
      say(`   total cost of the task: ${formatNumber(final.cost)}${final.budget !== null ? ` (budget ${formatNumber(final.budget)})` : ""}`);
      if (final.error) say(`   error: ${final.error.code}: ${final.error.message}`);
      const verification = await verifyChain(stack.runtime.stores.audit, pool, tenant);
      say(`8. ${describeVerification(tenant, verification)}`);
      const ok = final.status === "completed" && fanIn && verification.ok;
      say();
      say(ok ? "Demo finished: three sub-queries asked at once, their answers taken one at a time in arrival order, gathered, drafted; the chain verifies." : "Demo FAILED: see above.");
      return { ok, taskId: final.id };
    } finally {
      await stack.stop();
    }
  } finally {
    await agent.close();
  }
}

/**
 * Step 6: the fan-out from the records (the delegation steps), the fan-in from the orchestrator's own account (the
 * `turns` in its output), and whether that account matches the order in which the coordinator applied the
 * specialists' results. True when every sub-query was answered once, in that order, with one fewer outstanding
 * each turn.
 */
function narrateFanOut(task: TaskView, rows: readonly AuditRow[], say: (line: string) => void): boolean {
  // In the order asked: the coordinator numbers a turn's sub-queries `.d1`, `.d2`, … in the order the handler listed them.
  const askedOrder = (step: StepView) => Number(step.id.slice(`${ORIGIN_STEP}.d`.length));
  const delegates = task.steps.filter((s) => s.kind === "delegation" && s.id.startsWith(`${ORIGIN_STEP}.d`)).sort((a, b) => askedOrder(a) - askedOrder(b));
  const turns = ((task.steps.find((s) => s.id === ORIGIN_STEP)?.output as { turns?: TurnNote[] } | null)?.turns ?? []) as TurnNote[];
  // A stand-down is audited as `query` rows: one per sub-query asked (builtin:query), one for awaitMore.
  const asked = rows.filter((r) => r.action === "query" && r.stepId === ORIGIN_STEP && r.rule === "builtin:query");
  const correlationOf = (step: StepView) => turns.find((t) => t.from === step.id)?.took ?? "?";
  say(`6. Fan-out: the orchestrator's first turn returned one ctx.delegateAll with ${delegates.length} sub-queries (audited as \`query\` rows seq ${asked.map((r) => r.seq).join(", ")}):`);
  for (const step of delegates) say(`      "${correlationOf(step)}" → ${step.destination} as step ${step.id}: ${step.status}`);
  say("   Fan-in: each answer woke the orchestrator once, one turn at a time (its own account, from its output):");
  for (const t of turns) {
    const next = t.outstanding.length > 0 ? `still awaiting ${t.outstanding.map((c) => `"${c}"`).join(", ")} → ctx.awaitMore` : "nothing outstanding → read every answer with ctx.readResult, finished";
    say(`      turn ${t.turn}: took "${t.took}" (${t.status}, from ${t.from}); ${next}`);
  }
  // The coordinator records a delegate's result as it applies it (or the deny that failed it unsent); replies are
  // handed over in that order.
  const received = rows.filter((r) => (r.action === "result" || r.verdict === "deny") && delegates.some((d) => d.id === r.stepId)).map((r) => r.stepId);
  const handed = turns.map((t) => t.from);
  const sameOrder = received.length === delegates.length && received.join() === handed.join();
  say(`   the coordinator received the answers in the order ${received.join(", ")} (the delegates' \`result\` audit rows): ${sameOrder ? "the order the orchestrator was handed them" : `NOT the order it was handed them (${handed.join(", ")})`}`);
  const queued = arrivedWhileATurnRan(rows, new Set(delegates.map((d) => d.id)));
  if (queued.length === 0) say("   no answer arrived while a turn was running this time (one that does waits until the turn stands down)");
  for (const row of queued) {
    say(`   ${row.stepId}'s answer (seq ${row.seq}) arrived while a turn was running: it waited in the step's checkpoint until that turn stood down — never two turns at once`);
  }
  const shrinking = turns.every((t, i) => t.outstanding.length === delegates.length - 1 - i);
  return delegates.length > 1 && turns.length === delegates.length && sameOrder && shrinking;
}

/**
 * The delegates' answers the coordinator applied while a turn of the orchestrator ran: from the origin's WORK or a
 * REPLY (`dispatch`, `reply` rows) to its stand-down or final RESULT (`query`, `result` rows).
 */
function arrivedWhileATurnRan(rows: readonly AuditRow[], delegateIds: ReadonlySet<string>): AuditRow[] {
  let running = false;
  const arrived: AuditRow[] = [];
  for (const row of rows) {
    if (row.stepId === ORIGIN_STEP) {
      if (row.action === "dispatch" || row.action === "reply") running = true;
      else if (row.action === "query" || row.action === "result") running = false;
    } else if (running && delegateIds.has(row.stepId) && (row.action === "result" || row.verdict === "deny")) {
      arrived.push(row);
    }
  }
  return arrived;
}

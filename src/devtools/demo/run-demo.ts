/**
 * The demo: one governed workflow end to end, in one process, narrated for a newcomer.
 *
 * migrate → start the example A2A agent (the fact-checker) → start a coordinator, the example workers and the
 * gateway (for the agent's pushes) → switch on what the run needs and register the agent for the tenant → submit
 * examples/workflows/demo.yaml → start a task → watch it (approving the parked publish step as actor `demo`) →
 * print every hop from the audit log → verify the tenant's audit chain → print the console's URL and a sign-in key
 * (demo-console.ts). Everything it starts is stopped before it returns, whatever happened, so the process exits by
 * itself (with `keepRunning`, once the signal aborts).
 */
import { readFile } from "node:fs/promises";
import type { Config } from "../../config/index.js";
import type { TaskView } from "../../tasks/tasks.js";
import { parseWorkflowDefinition, topologicalOrder } from "../../workflow/definition.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { assetPath } from "../../package-paths.js";
import { CALLBACK_PATH_PREFIX } from "../../foreign/sender.js";
import { verifyChain, type VerifyChainResult } from "../../governance/audit-verify.js";
import type { Logger } from "../../logger.js";
import { submitWorkflow } from "../../store/workflow-store.js";
import { describeVerification, formatNumber, formatTable } from "../../cli/output.js";
import { formatStepLine, watchTask } from "../../cli/task-watch.js";
import { switchOnDemoFlags } from "./demo-flags.js";
import { DEMO_AGENT_KEY, DEMO_AGENT_SKILL, LOOPBACK_NETWORK, registerDemoAgent, startDemoAgent } from "./demo-foreign.js";
import { offerDemoConsole } from "./demo-console.js";
import { startDemoStack, type DemoStack } from "./demo-stack.js";
import { formatHopsTable } from "./hops-table.js";
import { indent, prepareDemoDatabase } from "./narration.js";

export const DEMO_WORKFLOW_PATH = assetPath("examples/workflows/demo.yaml");
export const DEMO_ROLES = ["researcher", "analyst", "writer", "publisher"] as const;
/** The demo role whose handler delegates (it needs BUS_ROUTED). */
export const DEMO_DELEGATING_ROLES = ["researcher"] as const;
/** Who the demo's approval is recorded as. */
export const DEMO_ACTOR = "demo";

export interface DemoOptions {
  config: Config;
  /** Receives each line of the narration. */
  print(line: string): void;
  /** For the in-process coordinator and workers (warnings and errors are worth showing). */
  logger: Logger;
  /** @defaultValue "demo" */
  tenant?: string;
  /** @defaultValue "governed agent coordination" */
  topic?: string;
  /** Bound on the task's run, from start to completion. @defaultValue 60 000 */
  timeoutMs?: number;
  /** Aborting stops the demo early (CANCELLED); everything is still shut down. */
  signal?: AbortSignal;
  /** After the run, keep the gateway (and the console) up until `signal` aborts. @defaultValue false */
  keepRunning?: boolean;
}

export interface DemoResult {
  ok: boolean;
  taskId: string;
  task: TaskView;
  chain: VerifyChainResult;
}

export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const tenant = options.tenant ?? "demo";
  const topic = options.topic ?? "governed agent coordination";
  const timeoutMs = options.timeoutMs ?? 60_000;
  const say = (line = "") => options.print(line);

  say("Switchyard demo: a four-step workflow runs through one governed coordinator, with a delegation between");
  say("workers, a hop to an A2A agent outside the perimeter, a human approval, and a hash-chained audit log.");
  say("Everything runs in this one process.");
  say();
  await prepareDemoDatabase(options.config.databaseUrl, say);

  say(`2. Starting the "${DEMO_AGENT_KEY}", an A2A v1.0 agent built with @a2a-js/sdk (it stands for an agent outside the perimeter)`);
  const agent = await startDemoAgent(options.logger);
  try {
    say(`   ${agent.baseUrl} — Agent Card at ${agent.cardUrl}, skill "${DEMO_AGENT_SKILL}", push notifications supported`);
    say(`3. Starting a coordinator, workers for the roles ${DEMO_ROLES.join(", ")}, and the gateway (for the agent's pushes)`);
    say("   (the researcher hands part of its turn to the analyst: a delegation the coordinator governs too)");
    const stack = await startDemoStack({ config: options.config, logger: options.logger, roles: DEMO_ROLES });
    try {
      say(`   gateway on ${stack.gateway.url}; the egress guard admits ${LOOPBACK_NETWORK} for this run (SWITCHYARD_EGRESS_ALLOWED_NETWORKS)`);
      const switched = await switchOnDemoFlags({
        pool: stack.runtime.pool,
        flags: stack.runtime.flags,
        tenant,
        roles: DEMO_ROLES,
        delegatingRoles: DEMO_DELEGATING_ROLES,
        egress: true,
        actor: DEMO_ACTOR,
      });
      say(`   ${switched}`);
      const registration = await registerDemoAgent(stack.runtime.stores.foreignAgents, stack.runtime.pool, tenant, agent.baseUrl);
      const { agentKey, allowHost, skills } = registration.agent;
      say(`   ${registration.outcome === "registered" ? "registered" : "updated the registration of"} foreign agent "${agentKey}" for tenant "${tenant}": skill ${skills.join(", ")}, egress allowed to ${allowHost} only`);
      say(`   (by hand: switchyard foreign register ${agentKey} --tenant ${tenant} --url ${agent.baseUrl} --skill ${skills.join(" --skill ")})`);
      const result = await runTask(stack, { ...options, tenant, topic, timeoutMs, say });
      await offerDemoConsole({
        pool: stack.runtime.pool,
        stores: stack.runtime.stores,
        tenant,
        gatewayUrl: stack.gateway.url,
        taskId: result.taskId,
        keepRunning: options.keepRunning ?? false,
        say,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      return result;
    } finally {
      await stack.stop();
    }
  } finally {
    await agent.close();
  }
}

interface TaskRunOptions extends DemoOptions {
  tenant: string;
  topic: string;
  timeoutMs: number;
  say(line?: string): void;
}

async function runTask(stack: DemoStack, options: TaskRunOptions): Promise<DemoResult> {
  const { tenant, say } = options;
  const { pool, tasks } = stack.runtime;

  say(`4. Submitting the workflow examples/workflows/demo.yaml for tenant "${tenant}"`);
  const definition = parseWorkflowDefinition(await readFile(DEMO_WORKFLOW_PATH, "utf8"), { format: "yaml" });
  const submitted = await submitWorkflow(pool, tenant, definition);
  const chain = topologicalOrder(definition).map((s) => s.id).join(" → ");
  say(`   ${submitted.ref}: ${chain}`);
  for (const step of definition.steps.filter((s) => s.approval)) {
    say(`   step "${step.id}" is marked approval: true, so the default policy parks it until a human decides`);
  }
  for (const step of definition.steps.filter((s) => s.to.kind === "foreign")) {
    say(`   step "${step.id}" goes to foreign:${step.to.id}: governed as a2a_egress, audited before any byte leaves, resumed by the agent's signed push to ${stack.gateway.url}${CALLBACK_PATH_PREFIX}…`);
  }

  const input = { topic: options.topic };
  say(`5. Starting a task with input ${JSON.stringify(input)}`);
  const started = await tasks.start({ orgId: tenant, workflow: submitted.ref, input });
  say(`   task ${started.taskId}`);

  say("6. Watching the task (a line per step change)");
  const decided = new Set<string>();
  const watching = watchTask({
    tasks,
    orgId: tenant,
    taskId: started.taskId,
    timeoutMs: options.timeoutMs,
    // Hops take milliseconds here; a fast poll lets a newcomer see most intermediate states, not just the ends.
    intervalMs: 50,
    ...(options.signal ? { signal: options.signal } : {}),
    onStep: (step) => say(`   ${formatStepLine(step)}`),
    onChange: async (view) => {
      for (const step of view.steps) {
        if (step.status !== "parked" || !step.approvalId || decided.has(step.approvalId)) continue;
        decided.add(step.approvalId);
        await approve(stack, options, view.id, step.approvalId);
      }
    },
  });
  const crashed = stack.done.then(() => {
    throw new SwitchyardError(ErrorCode.Internal, "the in-process coordinator or a worker stopped unexpectedly");
  });
  // Once the demo stops the stack, `done` settles and this rejects; nobody is racing it any more by then.
  crashed.catch(() => {});
  const final = await Promise.race([watching, crashed]);

  const ok = final.status === "completed";
  say(ok ? "7. The task completed. Every hop it made, from the audit log in seq order:" : `7. The task ended ${final.status}. Its audit rows in seq order:`);
  const rows = await stack.runtime.stores.audit.list(pool, tenant, { taskId: final.id, limit: 10_000 });
  say(indent(formatHopsTable(rows)));
  say(`   total cost of the task: ${formatNumber(final.cost)}${final.budget !== null ? ` (budget ${formatNumber(final.budget)})` : ""}`);
  const verdict = final.steps.find((s) => s.destination === `foreign:${DEMO_AGENT_KEY}`)?.output as
    | { verdict?: unknown; claims?: unknown }
    | null
    | undefined;
  if (typeof verdict?.verdict === "string") {
    const claims = Array.isArray(verdict.claims) ? ` (${verdict.claims.length} claims checked)` : "";
    say(`   the ${DEMO_AGENT_KEY}'s verdict: ${verdict.verdict}${claims}; the writer drafted from its annotated findings`);
  }
  const published = final.steps.find((s) => s.id === "publish")?.output as { url?: unknown } | null | undefined;
  if (typeof published?.url === "string") say(`   the publisher "published" to ${published.url}`);
  if (final.error) say(`   error: ${final.error.code}: ${final.error.message}`);

  say(`8. Verifying the audit hash chain of tenant "${tenant}"`);
  const verification = await verifyChain(stack.runtime.stores.audit, pool, tenant);
  say(`   ${describeVerification(tenant, verification)}`);
  say();
  if (ok && verification.ok) say("Demo finished: the task completed and the audit chain verifies.");
  else say(`Demo FAILED: ${ok ? "the audit chain does not verify" : `the task ended ${final.status}`}.`);
  return { ok: ok && verification.ok, taskId: final.id, task: final, chain: verification };
}

async function approve(stack: DemoStack, options: TaskRunOptions, taskId: string, approvalId: string): Promise<void> {
  const { say, tenant } = options;
  const pending = await stack.runtime.stores.approvals.list(stack.runtime.pool, tenant, { status: "pending", taskId });
  say("   A step is parked on an approval. Pending approvals of this task:");
  say(indent(formatTable(["approval", "step", "destination", "rule", "reason"], pending.map((a) => [a.id, a.stepId, a.destination, a.rule, a.reason])), 6));
  say(`   The demo approves it as actor "${DEMO_ACTOR}" (by hand: switchyard approval approve ${approvalId} --tenant ${tenant})`);
  const outcome = await stack.runtime.tasks.decideApproval({ orgId: tenant, approvalId, approve: true, actor: DEMO_ACTOR, reason: "approved by the demo" });
  say(`   ${outcome.alreadyDecided ? "already decided: " : ""}${outcome.status} by ${outcome.decidedBy}`);
}

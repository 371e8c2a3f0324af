/**
 * The workload: a fan-out/fan-in workflow (`a` → `b` ‖ `c` → `d` needs [b, c]) and, for every fifth task, an
 * orchestrator workflow (one step `o` whose handler fans out to three `role:branch` sub-queries and gathers their
 * replies one turn each, issue 14) for two tenants, set up as an
 * operator and a tenant would (`switchyard migrate`, `switchyard tenant create`, WorkflowService.Submit), and
 * tasks started through the gateway's Connect API with an API key and one idempotency key per task — so a start
 * whose answer was lost (gateway killed, Postgres restarting) is simply sent again and never makes a second task.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { TaskService } from "../src/gen/switchyard/api/v1/tasks_pb.js";
import { WorkflowService } from "../src/gen/switchyard/api/v1/workflows_pb.js";
import { createApiTransport } from "../src/cli/remote/transport.js";
import { toValue } from "../src/gateway/convert/values.js";
import { runCliCommand } from "../test/support/processes.js";
import { sleep } from "./random.js";
import { ORCHESTRATOR_STEP } from "./handler.js";

export const WORKFLOW_NAME = "fan";
export const ROLES = ["split", "branch", "join", "orchestrator"] as const;
/** Each step of the fan workflow and the steps it needs; the checks derive the expected order from this. */
export const STEPS: ReadonlyArray<{ id: string; role: (typeof ROLES)[number]; needs: readonly string[] }> = [
  { id: "a", role: "split", needs: [] },
  { id: "b", role: "branch", needs: ["a"] },
  { id: "c", role: "branch", needs: ["a"] },
  { id: "d", role: "join", needs: ["b", "c"] },
];
/** Enough attempts that a run of faults cannot exhaust them; a timeout well above the work time. */
export const STEP_TIMEOUT = "8s";
const RETRIES = 10;

/** The orchestrator workflow: its one step fans out to `role:branch` (faults/handler.ts). */
export const ORCHESTRATOR_WORKFLOW = "orchestrate";

/** Which workflow task `index` runs: every fifth is orchestrated. */
export function workflowOf(index: number): string {
  return index % 5 === 4 ? ORCHESTRATOR_WORKFLOW : WORKFLOW_NAME;
}

/** How many customers the tasks' inputs name (`customer`, the concurrency key of `--limits`), and its limit. */
const CUSTOMERS = 16;
export const KEY_LIMIT = 2;

/** `keyed` (with `--limits`): the branch steps of one customer's tasks, at most 2 in flight (a concurrency key). */
export function workflowYaml(options: { keyed?: boolean } = {}): string {
  const lines = STEPS.map((s) => {
    const key = options.keyed && s.role === "branch" ? `, concurrency: { key: task.input.customer, limit: ${KEY_LIMIT} }` : "";
    return `  - { id: ${s.id}, to: "role:${s.role}", needs: [${s.needs.join(", ")}], timeout: ${STEP_TIMEOUT}, retries: ${RETRIES}, backoff: 200ms, cost_estimate: 0.1${key} }`;
  });
  return `name: ${WORKFLOW_NAME}\nsteps:\n${lines.join("\n")}\n`;
}

export function orchestratorWorkflowYaml(): string {
  const step = `  - { id: ${ORCHESTRATOR_STEP}, to: "role:orchestrator", timeout: ${STEP_TIMEOUT}, retries: ${RETRIES}, backoff: 200ms, cost_estimate: 0.1 }`;
  return `name: ${ORCHESTRATOR_WORKFLOW}\nsteps:\n${step}\n`;
}

/** Migrates the suite's database, creates the tenants and submits the workflow through the API; returns each tenant's key. */
/**
 * Limits that hold steps back with this workload (2 harnesses × 10 per role): every role's capacity is 16, the
 * first tenant may have at most 6 `branch` steps in flight, the second weighs twice the first. Tighter than this,
 * the paced starts outgrow what the roles may take and the backlog outlasts the 8 s step timeout.
 */
export function fairnessLimits(tenants: readonly string[]): string[][] {
  const reason = ["--reason", "fault suite --limits", "--actor", "faults"];
  return [
    ...ROLES.map((role) => ["limits", "set", "--destination", `role:${role}`, "--max-in-flight", "16", ...reason]),
    ["limits", "set", "--tenant", tenants[0]!, "--destination", "role:branch", "--max-in-flight", "6", ...reason],
    ["limits", "set", "--tenant", tenants[1]!, "--weight", "2", ...reason],
  ];
}

export async function prepareTenants(options: { tenants: readonly string[]; env: Record<string, string>; commands?: readonly string[][] }): Promise<Map<string, string>> {
  const cli = async (args: string[]) => {
    const out = await runCliCommand(args, options.env);
    if (out.code !== 0) throw new Error(`switchyard ${args.join(" ")} exited ${out.code}:\n${out.stderr}${out.stdout}`);
    return out.stdout;
  };
  await cli(["migrate"]);
  const keys = new Map<string, string>();
  for (const tenant of options.tenants) {
    const created = JSON.parse((await cli(["tenant", "create", tenant, "--json"])).trim().split("\n").pop()!) as { key: string };
    keys.set(tenant, created.key);
  }
  for (const command of options.commands ?? []) await cli([...command]);
  return keys;
}

export async function submitWorkflow(gatewayUrl: string, keys: Map<string, string>, options: { keyed?: boolean } = {}): Promise<void> {
  for (const key of keys.values()) {
    const client = createClient(WorkflowService, createApiTransport({ url: gatewayUrl, token: key }));
    for (const source of [workflowYaml(options), orchestratorWorkflowYaml()]) await client.submit({ source });
  }
}

export interface StarterOptions {
  gatewayUrl: string;
  keys: Map<string, string>;
  total: number;
  /** Idempotency keys are `<runId>-<i>`. */
  runId: string;
  concurrency: number;
  /** Tasks per second (paced, so the load lasts through the faults); null: as fast as the gateway takes them. */
  ratePerSec: number | null;
  /** Give up when no start has succeeded for this long. */
  giveUpMs: number;
  signal: AbortSignal;
}

export interface StartSummary {
  /** Task id per task index. */
  taskIds: Map<number, string>;
  /** Calls sent again after an error or a lost answer. */
  retries: number;
  /** Answers with `created: false`: a retry found the task its lost first call had made. */
  replayed: number;
  /** Tasks that could not be started (the gateway did not take any start for `giveUpMs`). */
  failed: Array<{ index: number; error: string }>;
  errors: Map<string, number>;
}

export class Starter {
  readonly summary: StartSummary = { taskIds: new Map(), retries: 0, replayed: 0, failed: [], errors: new Map() };
  private lastSuccessAt = Date.now();

  constructor(private readonly options: StarterOptions) {}

  get started(): number {
    return this.summary.taskIds.size;
  }

  async run(): Promise<StartSummary> {
    const o = this.options;
    const tenants = [...o.keys.keys()];
    const clients = new Map(tenants.map((t) => [t, createClient(TaskService, createApiTransport({ url: o.gatewayUrl, token: o.keys.get(t)! }))]));
    const t0 = Date.now();
    let next = 0;
    const worker = async () => {
      for (;;) {
        const index = next++;
        if (index >= o.total || o.signal.aborted) return;
        if (o.ratePerSec !== null) await sleep(t0 + (index * 1000) / o.ratePerSec - Date.now(), o.signal);
        await this.startOne(index, clients.get(tenants[index % tenants.length]!)!);
      }
    };
    await Promise.all(Array.from({ length: o.concurrency }, worker));
    return this.summary;
  }

  private async startOne(index: number, client: ReturnType<typeof createClient<typeof TaskService>>): Promise<void> {
    const o = this.options;
    for (let attempt = 0; !o.signal.aborted; attempt++) {
      if (attempt > 0) this.summary.retries += 1;
      try {
        const res = await client.start(
          { workflow: workflowOf(index), input: toValue({ i: index, customer: `c${index % CUSTOMERS}` }), idempotencyKey: `${o.runId}-${index}` },
          { signal: AbortSignal.any([o.signal, AbortSignal.timeout(15_000)]) },
        );
        if (!res.created) this.summary.replayed += 1;
        this.summary.taskIds.set(index, res.task!.id);
        this.lastSuccessAt = Date.now();
        return;
      } catch (error) {
        const code = error instanceof ConnectError ? Code[error.code] : (error as Error).name;
        this.summary.errors.set(code, (this.summary.errors.get(code) ?? 0) + 1);
        if (Date.now() - this.lastSuccessAt > o.giveUpMs) {
          this.summary.failed.push({ index, error: (error as Error).message });
          return;
        }
        await sleep(Math.min(2_000, 200 * 2 ** Math.min(attempt, 4)), o.signal);
      }
    }
  }
}

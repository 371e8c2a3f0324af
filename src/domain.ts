/**
 * Glossary and shared shapes of the domain. Newcomers start here.
 *
 * - **tenant** (`orgId`): the owner of workflows, tasks, policies and one audit chain.
 * - **workflow**: a named, versioned (`name@version`), immutable DAG of steps.
 * - **task**: one run of a workflow with an input.
 * - **step**: one node of the DAG within a task; dispatched to a destination, attempted up to `retries + 1` times.
 * - **destination / endpoint**: where a step's work goes: `role:NAME`, `team:NAME` (queues) or `foreign:KEY` (an
 *   A2A agent outside the perimeter, named by the tenant's registry key).
 * - **envelope**: the protobuf message that travels the bus (QUERY / WORK / RESULT / REPLY / CONTROL).
 * - **hop**: one envelope moving from the coordinator to a destination. Every hop passes the choke-point:
 *   governor check, clearance clamp, audit append, cost accrual, then publish / park / fail closed.
 * - **park**: a step waits for something outside the bus (a human approval, a foreign agent).
 * - **delegation**: a worker mid-turn asks another destination a sub-query (QUERY); its turn stands down
 *   (`waiting`) and resumes on the REPLY.
 * - **resume**: a parked or waiting step continues, exactly once, however often the trigger is delivered.
 * - **bridge**: the correlation row between a FOREIGN hop and the A2A task it opened (later issue).
 */

/**
 * Governed action types. `reply` is the internal REPLY to a delegating origin; `origin_reply` posts words to the
 * conversation a task came from (a forge comment, a Slack thread, a Cairn comment) through a tenant's connection.
 */
export type ActionType = "dispatch" | "sub_query" | "reply" | "a2a_egress" | "origin_reply";
export const ACTION_TYPES: readonly ActionType[] = ["dispatch", "sub_query", "reply", "a2a_egress", "origin_reply"];

export type VerdictKind = "allow" | "deny" | "requires_approval";

export interface Verdict {
  verdict: VerdictKind;
  /** The rule that decided (`builtin:…` for built-in rules, the policy rule id otherwise). */
  rule: string;
  reason: string;
}

export type DestinationKind = "role" | "team" | "foreign";

/** A destination as written in workflows: `role:NAME`, `team:NAME` or `foreign:KEY`. */
export interface Destination {
  kind: DestinationKind;
  id: string;
}

export function formatDestination(d: Destination): string {
  return `${d.kind}:${d.id}`;
}

/**
 * Longest correlation id a delegating handler may choose: the coordinator keeps one per awaited reply and echoes it
 * on every REPLY, so the harness refuses longer ones and the coordinator refuses them on the wire.
 */
export const MAX_CORRELATION_ID_CHARS = 200;

const DESTINATION_RE = /^(role|team|foreign):([A-Za-z0-9][A-Za-z0-9_.-]{0,127})$/;

/** Parses `role:NAME` etc.; returns undefined when the text is not a destination. */
export function parseDestination(text: string): Destination | undefined {
  const m = DESTINATION_RE.exec(text);
  if (!m) return undefined;
  return { kind: m[1] as DestinationKind, id: m[2]! };
}

/** What the governor sees of a hop. Everything here is data; the governor reads no clock and does no I/O. */
export interface HopFacts {
  action: ActionType;
  orgId: string;
  taskId: string;
  stepId: string;
  workflow: string;
  destination: Destination;
  /** The hop's effective clearance floor: max(parent floor, step floor). */
  clearance: number;
  /** Estimated cost of this hop in the tenant's cost units. */
  cost: number;
  /** Cost already accrued on the task before this hop. */
  taskCost: number;
  /** The task's budget from its workflow definition, or null when unbounded. */
  taskBudget: number | null;
  /** The step asked for a human approval (`approval: true` in the workflow). */
  approvalHint: boolean;
  delegationDepth: number;
  /** The tenant's cost so far today (UTC), before this hop. */
  tenantDailyCost: number;
  /** The tenant's daily budget, or null when unbounded. */
  tenantDailyBudget: number | null;
  /** Whether A2A egress is switched on for this tenant (`A2A_EGRESS_ENABLED`, global and per tenant). */
  egressEnabled: boolean;
}

/** Per-tenant facts the engine loads once per batch and every hop of that tenant sees. */
export interface TenantFacts {
  dailyCost: number;
  dailyBudget: number | null;
  egressEnabled: boolean;
  /** Whether origin replies are switched on for this tenant (`REPLY_ENABLED`, global and per tenant). Absent = off. */
  replyEnabled?: boolean;
  /**
   * Keys of the tenant's foreign agents registered `idempotent`: only a hop to one of these is re-sent after a
   * timeout or failure. Absent = none (a re-send opens a new task at the agent and can repeat its effects).
   */
  idempotentForeignAgents?: ReadonlySet<string>;
}

/** The UTC day a tenant's cost is accrued to (`tenant_daily_cost.day`). */
export function costDay(nowMs: number): string {
  return new Date(nowMs).toISOString().slice(0, 10);
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Whether `value` can be a task, approval or connection id (a uuid column refuses anything else). */
export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}

export interface StepDefinition {
  id: string;
  to: Destination;
  /** Steps that must complete first. Default: the previous step in the list (none for the first). */
  needs: string[];
  timeoutMs: number | null;
  retries: number;
  /** Base of exponential backoff between attempts (ms). */
  backoffMs: number;
  costEstimate: number;
  clearance: number;
  approval: boolean;
  /** JSON Schema the step's input (`{ task, steps }`) must match at dispatch; absent: unchecked (src/workflow/step-schemas.ts). */
  inputSchema?: unknown;
  /** JSON Schema the handler's output must match at result; absent: unchecked. */
  outputSchema?: unknown;
  /** 1–5: orders the tenant's held steps on a destination, higher first (src/fairness/). Absent: 3. */
  priority?: number;
  /**
   * At most `limit` (1–10,000) of the tenant's steps with the same value at `key` (`task.input.` and 1–8 field
   * names) in flight (src/core/concurrency-key.ts).
   */
  concurrency?: { key: string; limit: number };
}

export interface WorkflowDefinition {
  name: string;
  description?: string;
  /** Task budget in cost units; null when unbounded. */
  budget: number | null;
  steps: StepDefinition[];
}

/** One audit entry before it is chained (seq and hashes are assigned at append time). */
export interface AuditEntry {
  orgId: string;
  /** A governed action type, or `result`, `approval`, `timeout`, `cancel`, `retry`, `fail`, `foreign_cancel`. */
  action: string;
  /** Who caused it: `coordinator`, `worker:role:NAME`, `user:NAME`, `cli`. */
  actor: string;
  destination: string;
  /** allow / deny / requires_approval for governed hops; accepted / approved / denied / failed otherwise. */
  verdict: string;
  rule: string;
  reason: string;
  /** sha256 hex of the hop's payload bytes ("" when there is none). */
  payloadHash: string;
  cost: number;
  taskId: string;
  stepId: string;
  envelopeId: string;
  atMs: number;
}

/** What an operator's change (a flag, a limit, a connection) says in the audit log; it carries no payload and no cost. */
export type OperatorChange = Pick<AuditEntry, "orgId" | "action" | "actor" | "destination" | "verdict" | "rule" | "reason" | "atMs">;

/** The audit entry of an operator's change: outside any task, so its task, step, envelope and payload are empty. */
export function operatorChangeEntry(change: OperatorChange): AuditEntry {
  return { ...change, payloadHash: "", cost: 0, taskId: "", stepId: "", envelopeId: "" };
}

export interface AuditRow extends AuditEntry {
  seq: number;
  prevHash: string;
  hash: string;
}

/** The hash a chain starts from. */
export const GENESIS_HASH = "0".repeat(64);

/**
 * Why a task does not move, in sentences an operator can act on: "no harness has read role:echo for 30 s;
 * HARNESS_ENABLED is off for role:echo (flags table)", "parked on approval X (rule …)", "waiting on foreign:KEY
 * (bridge …, last state working)", "held: COORDINATOR_ENABLED is off for tenant T". Reads only through the
 * StallFacts port, so the CLI uses it locally and a gateway could remotely.
 */
import type { StepView, TaskView } from "../tasks/tasks.js";
import { TERMINAL_TASK_STATUSES } from "../core/model.js";
import type { FlagFact, QueueReading, StallFacts } from "./stall-facts.js";

/**
 * A harness blocks in reads of at most SWITCHYARD_BLOCK_MS (1 s by default, 500 ms with live flags), so a consumer
 * idle longer than this is not reading.
 */
const RECENT_READ_MS = 5_000;

/** Steps whose next move belongs to someone else than the coordinator's own clock. */
const OPEN_STEP_STATUSES: ReadonlySet<string> = new Set(["pending", "held", "dispatched", "retrying", "parked", "waiting"]);

export async function explainStall(view: TaskView, facts: StallFacts, now: number = Date.now()): Promise<string[]> {
  if (TERMINAL_TASK_STATUSES.includes(view.status)) return [];
  const flags = await facts.flags();
  const lines: string[] = [];
  const held = flags.tenantHeld(view.orgId);
  if (held) lines.push(`held: ${flagText(held)}; the coordinator applies nothing for this tenant until it is on`);
  const bus = flags.busOff();
  if (bus) lines.push(`held: ${flagText(bus)}; dispatched work waits in the outbox`);
  for (const step of view.steps.filter((s) => OPEN_STEP_STATUSES.has(s.status))) {
    const line = await explainStep(view, step, facts, flags, now);
    if (line) lines.push(line);
  }
  return lines;
}

async function explainStep(view: TaskView, step: StepView, facts: StallFacts, flags: Awaited<ReturnType<StallFacts["flags"]>>, now: number): Promise<string | undefined> {
  const label = `step ${step.id}`;
  if (step.status === "parked" && step.approvalId) {
    const approval = await facts.approval(view.orgId, step.approvalId);
    if (!approval) return `${label}: parked on approval ${step.approvalId}`;
    return `${label}: parked on approval ${approval.id} (rule ${approval.rule}: ${approval.reason}) since ${ago(now - approval.createdAt.getTime())}; decide with \`switchyard approval approve|deny ${approval.id} --tenant ${view.orgId}\``;
  }
  if (step.status === "waiting") return undefined; // formatStepLine already names the replies it waits for
  const queue = /^(role|team):(.+)$/.exec(step.destination);
  if (queue && (step.status === "dispatched" || step.status === "retrying")) {
    const reading = await facts.queue(step.destination);
    const off = flags.harnessOff(queue[1] as "role" | "team", queue[2]!);
    const read = unread(step.destination, reading);
    if (!read && !off) return undefined; // a harness reads it: the step is being worked on
    return `${label}: ${[read ?? `a harness reads ${step.destination}`, off ? flagText(off) : undefined].filter(Boolean).join("; ")}`;
  }
  const foreign = /^foreign:(.+)$/.exec(step.destination);
  if (foreign && (step.status === "dispatched" || step.status === "retrying")) {
    const bridge = await facts.bridge(view.orgId, view.id, step.id);
    if (!bridge) return `${label}: waiting on ${step.destination} (no bridge recorded yet)`;
    const since = bridge.updatedAt ? `, for ${ago(now - bridge.updatedAt.getTime())}` : "";
    return `${label}: waiting on ${step.destination} (bridge ${bridge.id}, last state ${bridge.status}${since})`;
  }
  return undefined;
}

/** "no harness has read role:echo for 30 s", or undefined when one read it lately (or it has work in hand). */
function unread(stream: string, reading: QueueReading): string | undefined {
  if (!reading.groupExists || reading.consumers === 0 || reading.idleMs === null) return `no harness has ever read ${stream}`;
  if (reading.idleMs < RECENT_READ_MS) return undefined;
  const n = reading.undelivered ?? 0;
  const waiting = n > 0 ? ` (${n} ${n === 1 ? "entry" : "entries"} waiting)` : "";
  return `no harness has read ${stream} for ${ago(reading.idleMs)}${waiting}`;
}

function flagText(flag: FlagFact): string {
  return `${flag.text} (${flag.source === "table" ? "flags table" : "environment default"})`;
}

function ago(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

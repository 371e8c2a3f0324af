/**
 * Writing one decided phase of an engine batch (coordinator/engine.ts; TaskStateStore.persist): steps, tasks,
 * approvals, replies, held steps, the outbox — one statement each. The audit rows are returned, not appended: the
 * engine appends every phase's rows last, in one statement, because appending locks the tenant's chain head until
 * COMMIT.
 */
import { COORDINATOR_ENDPOINT, createEnvelope, encodeEnvelope, endpointOf, EnvelopeKind, ResultStatus, type Envelope } from "../../bus/codec.js";
import { inboxOf } from "../../bus/shards.js";
import type { AdmissionGate } from "../../core/admission.js";
import type { HeldStep } from "../../core/held-step.js";
import type { Effect, EnvelopeSpec, StepRecord, TaskRecord, TaskState } from "../../core/model.js";
import type { ReplyRecord, ReplyUpdate } from "../../core/reply-types.js";
import { parseDestination } from "../../domain.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { Metrics } from "../../metrics/metrics.js";
import { countOriginReply } from "../../metrics/metrics.js";
import { closeApprovals, insertApprovals } from "../approvals/postgres-approval-store.js";
import type { PoolClient } from "../db.js";
import { insertReplies, saveBuckets, updateReplies } from "../replies/postgres-reply-store.js";
import type { PersistedPhase } from "./engine-store.js";
import { saveAdmission } from "./postgres-admission-store.js";
import { insertOutbox } from "./postgres-outbox-store.js";
import { saveSteps, saveTasks } from "./postgres-task-store.js";

export interface PersistDeps {
  logger: Logger;
  metrics?: Metrics | undefined;
  maxPayloadBytes: number;
  shardCount: number;
}

export async function persistPhase(
  deps: PersistDeps,
  client: PoolClient,
  before: ReadonlyMap<string, TaskState>,
  after: ReadonlyMap<string, TaskState>,
  effects: readonly Effect[],
  gate: AdmissionGate | undefined,
): Promise<PersistedPhase> {
  const phase: PersistedPhase = { outbox: [], hops: [], approvals: [], tasks: [], replies: [], audit: [], freed: new Set(), freedKeyed: new Set() };
  const changedSteps: StepRecord[] = [];
  const unheld: StepRecord[] = [];
  const held: HeldStep[] = [];
  for (const [taskId, state] of after) {
    const prior = before.get(taskId)!;
    // Decisions copy the task record even when nothing in it changed: compare what `saveTasks` writes, so a
    // plain step completion does not rewrite the task row (a non-HOT update of every task in the batch).
    if (taskRowChanged(prior.task, state.task)) phase.tasks.push(state.task);
    for (const [stepId, step] of state.steps) {
      const was = prior.steps.get(stepId);
      if (was === step) continue;
      changedSteps.push(step);
      if (was?.status === "held" && step.status !== "held") unheld.push(step);
      if (was?.status === "dispatched" && step.status !== "dispatched") {
        phase.freed.add(step.destination);
        if (was.concurrencyKey) phase.freedKeyed.add(step.orgId);
      }
    }
  }
  const outgoing: Array<{ orgId: string; stream: string; envelopeId: string; bytes: Uint8Array }> = [];
  const closed: Array<Extract<Effect, { type: "close_approval" }>> = [];
  const newReplies: ReplyRecord[] = [];
  const replyUpdates: ReplyUpdate[] = [];
  const buckets = new Map<string, Extract<Effect, { type: "reply_bucket" }>>();
  for (const effect of effects) {
    switch (effect.type) {
      case "audit":
        phase.audit.push(effect.entry);
        break;
      case "send":
        try {
          outgoing.push({
            orgId: effect.envelope.orgId,
            stream: effect.envelope.destination,
            envelopeId: effect.envelope.id,
            bytes: encodeEnvelope(specToEnvelope(effect.envelope, inboxOf(effect.envelope.orgId, deps.shardCount)), deps.maxPayloadBytes),
          });
        } catch (error) {
          // Not sendable (e.g. a REPLY whose checkpoint pushed it over the cap): the step's timeout recovers it.
          deps.logger.error({ err: error, orgId: effect.envelope.orgId, taskId: effect.envelope.taskId, stepId: effect.envelope.stepId }, "envelope not sendable");
        }
        break;
      case "open_approval":
        phase.approvals.push(effect.approval);
        break;
      case "close_approval":
        closed.push(effect);
        break;
      case "hop":
        phase.hops.push(effect.hop);
        deps.metrics?.hops.inc({ action: effect.hop.facts.action, verdict: effect.hop.verdict.verdict });
        break;
      case "log":
        deps.logger[effect.level](effect.fields, effect.message);
        break;
      case "count":
        if (effect.metric === "delegation_depth_exceeded") deps.metrics?.delegationDepthExceeded.inc();
        if (effect.metric === "orphan_reply") deps.metrics?.orphanReplies.inc();
        if (effect.metric === "stranded_step_repaired") deps.metrics?.strandedStepsRepaired.inc();
        if (effect.metric === "origin_reply") countOriginReply(deps.metrics, "refused", effect.labels?.code);
        break;
      case "record_reply":
        newReplies.push(effect.reply);
        if (effect.reply.state === "pending") phase.replies.push(effect.reply.id);
        break;
      case "update_reply":
        replyUpdates.push(effect.update);
        if (effect.update.state === "pending") phase.replies.push(effect.update.id);
        break;
      case "reply_bucket":
        buckets.set(`${effect.orgId}\u0000${effect.actor}`, effect);
        break;
      case "hold":
        held.push(effect.held);
        break;
      case "foreign_dispatch":
        break;
    }
  }
  await saveTasks(client, phase.tasks);
  await saveSteps(client, changedSteps);
  await insertApprovals(client, phase.approvals);
  await closeApprovals(client, closed);
  await insertReplies(client, newReplies);
  await updateReplies(client, replyUpdates);
  await saveBuckets(client, [...buckets.values()]);
  // After the steps (held rows reference them); a step held again by a failed release keeps its place.
  await saveAdmission(client, held.filter((h) => after.get(h.taskId)?.steps.get(h.stepId)?.status === "held"), unheld, gate?.changedBuckets() ?? []);
  phase.outbox = await insertOutbox(client, outgoing);
  return phase;
}

/** Whether any column `saveTasks` writes differs; a changed error is always a new object. */
function taskRowChanged(before: TaskRecord, after: TaskRecord): boolean {
  return before.status !== after.status || before.cost !== after.cost || before.error !== after.error || before.finishedAtMs !== after.finishedAtMs;
}

const encoder = new TextEncoder();

/**
 * The envelope an outbox row carries. `inbox`: the tenant's shard inbox, named as the source so the answer goes
 * there (bus/shards.ts answerInbox).
 */
function specToEnvelope(spec: EnvelopeSpec, inbox: string = COORDINATOR_ENDPOINT.id): Envelope {
  const destination = parseDestination(spec.destination);
  if (!destination) throw new SwitchyardError(ErrorCode.Internal, `bad destination ${spec.destination}`);
  return createEnvelope({
    id: spec.id,
    orgId: spec.orgId,
    taskId: spec.taskId,
    stepId: spec.stepId,
    kind: spec.kind === "WORK" ? EnvelopeKind.WORK : EnvelopeKind.REPLY,
    source: { kind: COORDINATOR_ENDPOINT.kind, id: inbox },
    destination: endpointOf(destination),
    attempt: spec.attempt,
    clearanceFloor: spec.clearanceFloor,
    correlationId: spec.correlationId,
    delegationDepth: spec.delegationDepth,
    payload: { data: encoder.encode(spec.payloadJson), contentType: "application/json" },
    ...(spec.turn !== undefined ? { turn: spec.turn } : {}),
    status: spec.status === undefined ? ResultStatus.UNSPECIFIED : spec.status === "ok" ? ResultStatus.OK : ResultStatus.ERROR,
    error: spec.error ? { code: spec.error.code, message: spec.error.message, retryable: spec.error.retryable ?? false } : undefined,
    sourceStepId: spec.sourceStepId ?? "",
    resultRef: spec.resultRef ?? "",
    createdAtMs: BigInt(spec.createdAtMs),
    ...(spec.traceparent ? { trace: { traceparent: spec.traceparent, tracestate: "" } } : {}),
  });
}

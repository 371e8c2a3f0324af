/**
 * The shell around `decide`: applies a batch of events in ONE Postgres transaction — dedupe by envelope id,
 * lock and load the tasks, decide each event in order, then write steps, tasks, approvals, the audit chain and
 * the outbox with one statement each. Publishing happens after commit (see outbox.ts).
 */
import { performance } from "node:perf_hooks";
import type { AuditEntry, HopFacts, TenantFacts, Verdict, WorkflowDefinition } from "../domain.js";
import type { Pool, PoolClient, Queryable } from "../store/db.js";
import type { EngineStore } from "../store/engine/engine-store.js";
import { AuditHeadCache } from "../governance/audit-heads.js";
import { evaluate } from "../governance/governor.js";
import type { CompiledPolicy } from "../governance/policy.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import { DEFAULT_REPLY_LIMITS, type ReplyEventFacts, type ReplyLimits } from "../core/reply-types.js";
import { ReplyBatch } from "./reply-batch.js";
import { decide } from "../core/decide.js";
import { derivedIdSource, sha256Hex } from "./envelopes.js";
import { unavailableForeignDispatcher, type ForeignDispatcher } from "./foreign-dispatcher.js";
import { DEFAULT_DELEGATION_LIMITS, type DecideContext, type DelegationLimits, type Effect, type TaskState } from "../core/model.js";
import { HopSpans } from "../telemetry/hop-spans.js";
import { tracingOn } from "../telemetry/tracing.js";
import { orderSteps } from "../core/step-order.js";
import { emptyResult, mergeResult, type ApplyInTransactionOptions, type ApplyResult, type EngineFence, type EngineInput, type InlineRelease } from "./engine-types.js";
import { ErrorCode, isSwitchyardError } from "../errors.js";
import { AdmissionGate } from "../core/admission.js";
import { NO_LIMITS, type LimitSource } from "../core/limits.js";

export type { ApplyInTransactionOptions, ApplyResult, EngineFence, EngineInput, EngineRefusal, InlineRelease } from "./engine-types.js";

/** Sources take the transaction's client: a second pooled connection per transaction can exhaust the pool. */
export interface PolicySource {
  get(orgId: string, db: Queryable): Promise<CompiledPolicy>;
}
export interface WorkflowSource {
  get(orgId: string, name: string, version: number, db: Queryable): Promise<WorkflowDefinition>;
}

export interface EngineOptions {
  /** Where the engine reads and writes, one port per concern (the Postgres adapters: store/engine/postgres-engine-store.ts). */
  store: EngineStore;
  policies: PolicySource;
  workflows: WorkflowSource;
  foreign?: ForeignDispatcher;
  maxPayloadBytes: number;
  defaultStepTimeoutMs: number;
  /** @defaultValue 24 hours */
  approvalTtlMs?: number;
  /** Fan-out bounds (config.coordinator). @defaultValue DEFAULT_DELEGATION_LIMITS */
  delegationLimits?: DelegationLimits;
  logger?: Logger;
  metrics?: Metrics;
  /** Injected for tests; the only clock the coordinator reads. */
  clock?: () => number;
  /** Bounds of origin replies (config.origin). @defaultValue DEFAULT_REPLY_LIMITS */
  replyLimits?: ReplyLimits;
  /** Told after a commit that made reply rows `pending`, so it dials them now rather than on its next poll. */
  replySender?: { kick(): void };
  /**
   * A fenced view (a coordinator's) keeps its tenants' audit-chain heads in memory and appends without locking
   * them first (governance/audit-heads.ts); `false` always locks and reads them. @defaultValue true
   */
  auditHeadsInMemory?: boolean;
  /** Dispatch limits in force (issue 15: the live table). @defaultValue none: every dispatch is admitted */
  limits?: LimitSource;
}

/** A decided and written phase of a batch (store/engine/postgres-phase-writer.ts). */
interface AppliedPhase {
  audit: AuditEntry[];
  freed: Set<string>;
  freedKeyed: Set<string>;
  gate: AdmissionGate | undefined;
  /** The tenants this phase fenced. */
  orgIds: string[];
}

export class Engine {
  private readonly logger: Logger;
  private readonly foreign: ForeignDispatcher;
  private readonly clock: () => number;
  private readonly store: EngineStore;
  /** Set on a coordinator's fenced view of the engine (`fenced`); the gateway's engine has none. */
  private readonly fenceBy: EngineFence | undefined = undefined;
  /** The chain heads a fenced view last committed; used by `apply` only (its retry handles STALE_HEAD). */
  private readonly heads: AuditHeadCache | undefined = undefined;
  /** Set on a coordinator's fenced view when limits are in force: held steps go in the batch that frees a slot. */
  private readonly inlineRelease: InlineRelease | undefined = undefined;

  constructor(private readonly options: EngineOptions) {
    this.store = options.store;
    this.logger = options.logger ?? silentLogger;
    this.foreign = options.foreign ?? unavailableForeignDispatcher;
    this.clock = options.clock ?? Date.now;
  }

  /**
   * This engine, with every transaction first proving the fence for its tenants. A view sharing everything else
   * (caches, and whatever a subclass adds, such as the bench's probes), not a copy.
   */
  fenced(fence: EngineFence, release?: InlineRelease): this {
    const view = Object.create(this) as this;
    Object.defineProperty(view, "fenceBy", { value: fence });
    if (release) Object.defineProperty(view, "inlineRelease", { value: release });
    if (this.options.auditHeadsInMemory !== false) Object.defineProperty(view, "heads", { value: new AuditHeadCache({ clock: this.clock }) });
    return view;
  }

  /** The store cannot be reached (its port says so): a failure that is not the batch's fault, to back off from. */
  isUnavailable(error: unknown): boolean {
    return this.store.transactions.isUnavailable(error);
  }

  /** Tells the reply sender about committed `pending` rows; call after COMMIT (apply() does). */
  kickReplies(result: Pick<ApplyResult, "replies"> | undefined): void {
    if (result && result.replies.length > 0) this.options.replySender?.kick();
  }

  /**
   * Applies the events in their own transaction, retrying on deadlock / serialization failure and on a stale
   * cached audit head. The cached heads move only once the transaction committed; any failure (a COMMIT whose
   * outcome is unknown included) drops the batch's tenants from the cache, so the next try reads them locked.
   */
  async apply(pool: Pool, inputs: readonly EngineInput[]): Promise<ApplyResult> {
    const heads = this.heads;
    const { transactions } = this.store;
    const result = await transactions.retryOnConflict(async () => {
      const spans = tracingOn() ? new HopSpans() : undefined;
      // The tenants of every phase (an inline release adds some): their heads may have moved if COMMIT did.
      const touched = new Set<string>();
      try {
        const applied = await transactions.transaction(pool, (client) => this.applyEvents(client, inputs, heads, spans, touched));
        spans?.end({ committed: true });
        return applied;
      } catch (error) {
        spans?.end({ committed: false, error });
        heads?.forget(touched);
        throw error;
      }
    });
    heads?.advance(result.audit);
    this.kickReplies(result);
    return result;
  }

  /**
   * Applies the events inside the caller's transaction. Audit heads are locked and read unless `options.heads` is
   * given, which only a caller retrying STALE_HEAD and advancing the cache after COMMIT may do (`apply`).
   */
  async applyInTransaction(client: PoolClient, inputs: readonly EngineInput[], options: ApplyInTransactionOptions = {}): Promise<ApplyResult> {
    // Tracing off: no spans, and no span, context or attribute is built below.
    if (options.spans || !tracingOn()) return this.applyEvents(client, inputs, options.heads, options.spans);
    // Inside a caller's transaction: the commit is the caller's, so the spans end once the events are applied.
    const spans = new HopSpans();
    try {
      const result = await this.applyEvents(client, inputs, options.heads, spans);
      spans.end({ committed: "by the caller" });
      return result;
    } catch (error) {
      spans.end({ committed: false, error });
      throw error;
    }
  }

  private async applyEvents(client: PoolClient, inputs: readonly EngineInput[], heads: AuditHeadCache | undefined, spans: HopSpans | undefined, touched?: Set<string>): Promise<ApplyResult> {
    const result = emptyResult();
    const first = await this.applyPhase(client, inputs, spans, result, { releasing: false, touched });
    if (!first) return result;
    const audit = first.audit;
    const released = await this.releaseInline(client, first, spans, result, touched);
    if (released) audit.push(...released.audit);
    // Last: appending locks the tenant's chain head until COMMIT, and every other transaction of the tenant
    // (other coordinators, task starts, approvals) queues on that lock, so nothing else should run under it.
    const started = performance.now();
    result.audit = await this.store.audit.append(client, audit, { heads });
    this.options.metrics?.auditAppendLatency.observe((performance.now() - started) / 1000);
    spans?.audited(result.audit);
    return result;
  }

  /**
   * Issue 15: a batch that freed a slot on a destination where steps are held lets the next of them go in the same
   * transaction (a second phase of release events), so a slot never waits for the release loop's next round and
   * the step that takes it commits with the result that freed it. Which steps go is the releaser's plan (fair
   * shares, this coordinator's tenants only). A task another transaction holds is skipped, not waited for (its
   * locks would be taken out of id order): the release loop lets it go later. The phase runs under a savepoint: if
   * it fails, the batch's own events still commit and the held steps wait for the loop — a held step that cannot
   * be released must not hold back every batch that frees a slot.
   */
  private async releaseInline(client: PoolClient, first: AppliedPhase, spans: HopSpans | undefined, result: ApplyResult, touched: Set<string> | undefined): Promise<AppliedPhase | undefined> {
    if (!this.inlineRelease || !first.gate) return undefined;
    const gate = first.gate;
    const destinations = [...new Set([...first.freed, ...gate.roomBehindHeld(), ...gate.keyedHeldDestinations(first.freedKeyed)])].filter((d) => gate.hasHeld(d));
    if (destinations.length === 0) return undefined;
    const inlineRelease = this.inlineRelease;
    const { transactions } = this.store;
    try {
      // Its own result, merged once the phase is written: a rolled-back phase leaves the batch's counts alone.
      const own = emptyResult();
      const phase = await transactions.savepoint(client, async () => {
        const releases = await inlineRelease.plan(client, destinations);
        // The first phase's tenants are fenced already (their lease rows stay share-locked until COMMIT).
        const fenced = new Set(first.orgIds);
        return releases.length === 0 ? undefined : await this.applyPhase(client, releases, spans, own, { releasing: true, touched, fenced });
      });
      mergeResult(result, own);
      return phase;
    } catch (error) {
      if (transactions.isUnavailable(error)) throw error;
      this.logger.warn({ err: error, destinations }, "releasing held steps inline failed; the release loop retries them");
      return undefined;
    }
  }

  /**
   * One phase: decides the inputs in order and writes what they changed (not the audit rows: returned). Undefined
   * when nothing was left to decide. `releasing`: the inline release phase, whose tasks are locked without waiting
   * and whose tenants, if one of their shards was lost meanwhile, are left to their new owner.
   */
  private async applyPhase(
    client: PoolClient,
    inputs: readonly EngineInput[],
    spans: HopSpans | undefined,
    result: ApplyResult,
    phase: { releasing: boolean; touched: Set<string> | undefined; fenced?: ReadonlySet<string> },
  ): Promise<AppliedPhase | undefined> {
    for (const input of inputs) phase.touched?.add(input.orgId);
    // First: the lease rows are share-locked until COMMIT, so no takeover can slip in before this batch ends.
    const unfenced = new Set(inputs.map((i) => i.orgId).filter((orgId) => !phase.fenced?.has(orgId)));
    if (this.fenceBy && unfenced.size > 0) {
      try {
        await this.fenceBy.fence(client, unfenced);
      } catch (error) {
        // The fence throws after its query succeeded: the transaction is intact and the first phase still commits.
        if (phase.releasing && isSwitchyardError(error) && error.code === ErrorCode.Fenced) return undefined;
        throw error;
      }
    }
    const fresh = await this.store.envelopes.fresh(client, inputs);
    result.duplicates += inputs.length - fresh.length;
    if (fresh.length === 0) return undefined;

    const orgIds = [...new Set(fresh.map((i) => i.orgId))];
    const { tasks, steps, tenantFacts: storedFacts } = await this.store.tasks.lockForUpdate(client, fresh.map((i) => i.taskId), { orgIds, nowMs: this.clock() }, { skipLocked: phase.releasing });
    const queue = phase.releasing ? fresh.filter((i) => tasks.has(i.taskId)) : [...fresh];
    if (queue.length === 0) return undefined;
    if (spans) spans.useRoots(await this.store.traceRoots.load(client, queue.map((i) => i.taskId)));
    const states = new Map<string, TaskState>();
    const before = new Map<string, TaskState>();
    for (const [taskId, task] of tasks) {
      const workflow = await this.options.workflows.get(task.orgId, task.workflowName, task.workflowVersion, client);
      const state = { task, steps: orderSteps(workflow, steps.get(taskId) ?? []), workflow };
      states.set(taskId, state);
      before.set(taskId, state);
    }

    const effects: Effect[] = [];
    const applied = new Set<string>();
    const refusedBefore = result.refused.length;
    // The clock is read after the admission load: a dispatch that takes a slot a committed result freed is then
    // never stamped earlier than that result's row.
    const limits = (this.options.limits ?? NO_LIMITS).limits();
    const admissionFacts = await this.store.admission.load(client, limits, states, queue);
    const now = this.clock();
    const gate = admissionFacts ? new AdmissionGate(admissionFacts, now) : undefined;
    const facts = new Map<string, TenantFacts>();
    const dailyDeltas = new Map<string, number>();
    const replies = new ReplyBatch(this.store.replyFacts);
    while (queue.length > 0) {
      const input = queue.shift()!;
      const state = states.get(input.taskId);
      if (!state || state.task.orgId !== input.orgId) {
        // Unknown task, or an envelope claiming another tenant's task: refused, never applied.
        const reason = state ? `task ${input.taskId} is not a task of tenant ${input.orgId}` : `tenant ${input.orgId} has no task ${input.taskId}`;
        result.refused.push({ input, label: state ? "tenant_mismatch" : "unknown_task", reason });
        this.logger.warn({ orgId: input.orgId, taskId: input.taskId, eventType: input.event.type, envelopeId: input.event.eventId }, `event refused: ${reason}`);
        continue;
      }
      const orgId = state.task.orgId;
      const policy = await this.options.policies.get(orgId, client);
      let tenant = facts.get(orgId);
      if (!tenant) facts.set(orgId, (tenant = await this.store.tenantFacts.get(orgId, client, now, storedFacts.get(orgId))));
      const reply = await replies.facts(client, state, input.event);
      const span = spans?.start(input);
      const decision = decide(state, input.event, this.context(policy, input.event.eventId, tenant, reply, gate));
      if (decision.refused) {
        spans?.skipped(span, "refused", decision.refused);
        result.refused.push({ input, label: "wrong_sender", reason: decision.refused });
        this.logger.warn({ orgId, taskId: input.taskId, eventType: input.event.type, envelopeId: input.event.eventId }, `event refused: ${decision.refused}`);
        continue;
      }
      if (decision.ignored) {
        spans?.skipped(span, "ignored", decision.ignored);
        result.ignored.push({ taskId: input.taskId, type: input.event.type, reason: decision.ignored });
        continue;
      }
      result.applied++;
      applied.add(input.event.eventId);
      const delta = decision.state.task.cost - state.task.cost;
      if (delta !== 0) {
        facts.set(orgId, { ...tenant, dailyCost: tenant.dailyCost + delta });
        dailyDeltas.set(orgId, (dailyDeltas.get(orgId) ?? 0) + delta);
      }
      states.set(input.taskId, decision.state);
      replies.observe(decision.effects);
      // With tracing on, the envelopes this event emits carry its span's traceparent.
      for (const effect of spans ? spans.decided(span, decision.effects) : decision.effects) {
        if (effect.type === "foreign_dispatch") {
          const outcome = await this.foreign.dispatch(client, effect.envelope);
          if (outcome.accepted && outcome.sentHash) hashWhatWasSent(effects, effect.envelope.id, outcome.sentHash);
          if (!outcome.accepted) {
            // Same path a failed foreign agent takes: a non-retryable error RESULT for this attempt.
            queue.unshift({
              orgId: input.orgId,
              taskId: input.taskId,
              event: {
                type: "result",
                eventId: `${effect.envelope.id}:foreign-refused`,
                stepId: effect.envelope.stepId,
                attempt: effect.envelope.attempt,
                sender: { kind: "coordinator" },
                ok: false,
                output: null,
                error: outcome.error,
                cost: 0,
                payloadHash: "",
              },
            });
          }
        }
        effects.push(effect);
      }
      if (input.createdAtMs) this.observeLatency(decision.effects, input.createdAtMs);
    }
    await this.store.envelopes.forgetRefused(client, result.refused.slice(refusedBefore), applied);
    // Before the audit append: it takes the tenant's chain-head lock, which should be the last lock taken.
    await this.store.costs.accrue(client, dailyDeltas, now);
    const persisted = await this.store.tasks.persist(client, before, states, effects, gate);
    result.outbox.push(...persisted.outbox);
    result.hops.push(...persisted.hops);
    result.approvals.push(...persisted.approvals);
    result.tasks.push(...persisted.tasks);
    result.replies.push(...persisted.replies);
    return { audit: persisted.audit, freed: persisted.freed, freedKeyed: persisted.freedKeyed, gate, orgIds };
  }

  private context(policy: CompiledPolicy, eventId: string, tenant: TenantFacts, reply: ReplyEventFacts | undefined, admission: AdmissionGate | undefined): DecideContext {
    return {
      ...(admission ? { admission } : {}),
      replyLimits: this.options.replyLimits ?? DEFAULT_REPLY_LIMITS,
      ...(reply ? { reply } : {}),
      tenant,
      approvalTtlMs: this.options.approvalTtlMs ?? 24 * 60 * 60 * 1000,
      delegationLimits: this.options.delegationLimits ?? DEFAULT_DELEGATION_LIMITS,
      now: this.clock(),
      govern: (hop: HopFacts): Verdict => evaluate(policy, hop),
      hashPayload: sha256Hex,
      newId: derivedIdSource(eventId),
      maxPayloadBytes: this.options.maxPayloadBytes,
      defaultStepTimeoutMs: this.options.defaultStepTimeoutMs,
    };
  }

  private observeLatency(effects: Effect[], createdAtMs: number): void {
    const metrics = this.options.metrics;
    if (!metrics) return;
    const seconds = Math.max(0, (this.clock() - createdAtMs) / 1000);
    for (const effect of effects) if (effect.type === "hop") metrics.hopLatency.observe({ action: effect.hop.facts.action }, seconds);
  }
}

/**
 * A foreign hop's audit row hashes exactly what leaves the perimeter (the input after the registration's field
 * list), not the hop's whole payload. That row (same envelope id) was decided just before the dispatch effect, so
 * it is already in `effects`, not yet persisted; it is replaced, never mutated (decisions may be shared).
 */
function hashWhatWasSent(effects: Effect[], envelopeId: string, sentHash: string): void {
  for (let i = effects.length - 1; i >= 0; i--) {
    const effect = effects[i]!;
    if (effect.type === "audit" && effect.entry.envelopeId === envelopeId) {
      effects[i] = { type: "audit", entry: { ...effect.entry, payloadHash: sentHash } };
      return;
    }
  }
}

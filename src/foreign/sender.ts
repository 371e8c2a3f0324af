/**
 * The post-commit half of a foreign hop: sends each `pending_send` bridge through its agent's transport
 * (transport.ts: A2A or MCP, picked by the registry's protocol). The sender itself is transport-blind: it claims,
 * retries, breaks, records and resumes; what "sending" means — and what must be checked first — is the transport's.
 *
 * Sends run in a bounded pool (send-slots.ts: `foreign.sendConcurrency` slots, and per tenant its share), claimed as
 * slots free (send-claim.ts: `FOR UPDATE SKIP LOCKED` and a lease, `claimed_until`, so several coordinators share the
 * work and a crashed sender's bridge is picked up again after the lease): a call that hangs holds one slot of its
 * own tenant's share, never the others'. The send itself runs OUTSIDE any transaction, so a push that races the
 * response is never blocked on our row lock: it finds the bridge by id and records the foreign task id itself; the
 * send's answer must then agree.
 *
 * Before sending, the step attempt must still be in flight (a cancelled or timed-out hop sends nothing); while the
 * call runs it is aborted as soon as the attempt is no longer in flight (checked every `livenessIntervalMs`, and at
 * once when a progress heartbeat finds it over), and at its hard ceiling, `foreign.callCeilingFactor` step timeouts
 * after it started, which progress cannot move. Then
 * `transport.send` runs inside `withRetries` and the per-(tenant, agent) circuit breaker. The A2A transport resolves
 * the Agent Card through the agent's guarded fetch and checks it there (a2a/a2a-transport.ts: the registry's skills
 * and a step input's `skill`, push only when the registration forces `--delivery push` — otherwise a card without
 * push is polled); the MCP transport connects and calls the tool, marking the call started first (`started`), so a
 * call that is the work is never made twice. A successful send is recorded (`recordSent`: foreign id, dialect,
 * delivery, first poll time when polled) and its answer applied like a push when it says something (terminal,
 * interrupted, or artifacts). Any failure — card, egress refusal, exhausted retries, open breaker — fails the
 * attempt closed with a RESULT to the coordinator (resume.ts): `a2a:<bridge>:not-sent` when no request can have
 * reached the agent (the step's retries may then re-send it), `a2a:<bridge>:send-failed` otherwise (never re-sent to
 * an agent not registered idempotent); a failure after an MCP call started becomes a `failed` observation.
 */
import { defaultConfig, type ForeignConfig } from "../config/index.js";
import type { DependencyHealth } from "../process/dependency-health.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Queryable } from "../store/db.js";
import type { LinkKeyStore } from "../store/approvals/approval-store.js";
import type { BridgeRecord, ClaimedBridge } from "../store/bridges/bridge-store.js";
import type { LimitSource } from "../core/limits.js";
import { callStop, SendPool, stopOf } from "./send-pool.js";
import { SendSlots, type ClaimRooms, type InFlightCall } from "./send-slots.js";
import { notificationSecret, signCallbackToken } from "./callback-token.js";
import { tenantSqlFilter, type CoordinatorFlags } from "../flags/flag-types.js";
import { applyObservation, applyObservations, failSend, type BridgeResumeDeps } from "./resume.js";
import { CallHeartbeat } from "./call-heartbeat.js";
import type { PushTarget } from "./a2a/client.js";
import { isInterruptedForeignState, isTerminalForeignState } from "./a2a/task-state.js";
import type { ForeignObservation } from "./bridge-transition.js";
import type { ForeignTransports, TransportSendResult } from "./transport.js";
import { endSpan, inSpan, startEgressSpan } from "../telemetry/foreign-spans.js";
import { tracingOn } from "../telemetry/tracing.js";
import type { ForeignAgentRecord } from "./registry.js";
import type { ForeignAgentStore } from "../store/foreign/foreign-agent-store.js";
import { EgressReason, isTransientFailure, withRetries, type BreakerRegistry } from "./egress/index.js";

export const CALLBACK_PATH_PREFIX = "/api/v1/a2a/callback/";

export interface ForeignSenderOptions extends BridgeResumeDeps {
  /** The foreign agent registry's port (`runtime.stores.foreignAgents`): where each bridge's agent is looked up. */
  agents: Pick<ForeignAgentStore, "find">;
  /** The tenants' link keys (`runtime.stores.linkKeys`): each bridge's callback token is signed with the one it names. */
  linkKeys: Pick<LinkKeyStore, "get">;
  transports: ForeignTransports;
  breakers: BreakerRegistry;
  foreign: ForeignConfig;
  /** Base URL agents reach our callback route at (SWITCHYARD_PUBLIC_URL). */
  publicUrl: string;
  /** Calls in flight at once in this process. @defaultValue foreign.sendConcurrency */
  concurrency?: number;
  /** Dispatch weights, for each tenant's share of the slots. @defaultValue every tenant weighs 1 */
  limits?: LimitSource;
  /** How often the calls in flight are checked against their step attempts (ms). @defaultValue 1000 */
  livenessIntervalMs?: number;
  /** How long a claim holds off other senders (ms). @defaultValue retries × total timeout + 30 s */
  leaseMs?: number;
  /** Ask agents for `Authorization: Bearer` instead of the token header. @defaultValue false */
  bearer?: boolean;
  /**
   * Checked again right before sending: egress switched off after the hop was governed (e.g. while it waited for
   * an approval or in the queue) still stops the bytes. @defaultValue no check (the governor's verdict stands)
   */
  egress?: { egressEnabled(orgId: string): boolean };
  /**
   * The coordinator's switches: with BUS_ENABLED off nothing is sent, and the bridges of a tenant whose coordinator
   * is switched off (COORDINATOR_ENABLED) wait, unsent, until it is on again. @defaultValue everything on
   */
  flags?: CoordinatorFlags;
  clock?: () => number;
  /** Where a kicked run that fails because Postgres or Redis is down is recorded (logged once per outage). */
  health?: DependencyHealth;
  /**
   * The coordinator's step timeout for steps whose workflow names none (SWITCHYARD_STEP_TIMEOUT_MS): how far an MCP
   * tool's progress moves the step's due time, as in decide.ts. @defaultValue the configuration's default
   */
  defaultStepTimeoutMs?: number;
}

interface SendProgress {
  /** Whether any request may have reached the agent, over all of the send's tries. */
  mayHaveReached: boolean;
  /** Set once a call that is the work was recorded as started (its foreign id). */
  startedAs?: string;
}

/** How often the calls in flight are checked against their step attempts. */
const LIVENESS_INTERVAL_MS = 1_000;

export class ForeignSender {
  private readonly logger: Logger;
  private readonly clock: () => number;
  private readonly pool: SendPool<ClaimedBridge>;
  private active = false;

  constructor(private readonly options: ForeignSenderOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "a2a-sender" });
    this.clock = options.clock ?? Date.now;
    const limits = options.limits;
    const slots = new SendSlots({
      capacity: options.concurrency ?? options.foreign.sendConcurrency,
      tenantPercent: options.foreign.tenantSendPercent,
      ...(limits ? { limits: () => limits.limits() } : {}),
    });
    this.pool = new SendPool({
      slots,
      claim: (rooms) => this.claim(rooms),
      send: (claimed, call) => this.sendOne(claimed, call),
      attemptsOver: (ids) => options.bridges.attemptsOver(options.pool, ids),
      enabled: () => !options.flags || options.flags.busEnabled(),
      // An outage is the process's DependencyHealth's to log (once); the periodic fill retries.
      absorb: (error) => options.health?.absorb(error) ?? false,
      logger: this.logger,
      livenessIntervalMs: options.livenessIntervalMs ?? LIVENESS_INTERVAL_MS,
    });
  }

  /** Calls in flight in this process. */
  get inFlight(): number {
    return this.pool.inFlight;
  }

  /**
   * Asks for a fill soon (after a hop wrote a bridge). Only in a process whose loop runs the sender (a coordinator),
   * so a short-lived CLI process never starts a send it would abandon.
   */
  kick(): void {
    if (!this.active) return;
    setTimeout(() => this.pool.fillSoon(), 10);
  }

  /** Claims into the free slots and starts those sends without waiting for them (the periodic job); how many started. */
  pump(): Promise<number> {
    this.active = true;
    return this.pool.fill();
  }

  /** Sends every claimable bridge and waits until nothing is in flight; how many were handled (tests, step-by-step runs). */
  run(): Promise<number> {
    this.active = true;
    return this.pool.run();
  }

  /** Stops claiming; the calls in flight get `graceMs`, then are aborted (as a crash would leave them). */
  close(graceMs = 5_000): Promise<void> {
    return this.pool.close(graceMs);
  }

  private async claim(rooms: ClaimRooms): Promise<ClaimedBridge[]> {
    const tenants = tenantSqlFilter(this.options.flags?.coordinatorTenants?.());
    if (tenants.none) return [];
    // Each attempt may take a card fetch and a send, each up to the total timeout, plus backoff between attempts.
    const f = this.options.foreign;
    const leaseMs = this.options.leaseMs ?? f.retries * (2 * f.totalTimeoutMs + 5_000) + 30_000;
    return this.options.bridges.claimForSend(this.options.pool, { rooms, leaseMs, tenants });
  }

  /** Whether the bridge's step attempt is over; an unanswered question (Postgres down) says no, so the failure is kept. */
  private movedOn(bridgeId: string): Promise<boolean> {
    return this.options.bridges.attemptsOver(this.options.pool, [bridgeId]).then((over) => over.length > 0, () => false);
  }

  /** Sends one claimed bridge (or closes or fails it); false when it was handed back unsent, to wait. */
  private async sendOne(claimed: ClaimedBridge, call: InFlightCall): Promise<boolean> {
    const { bridge } = claimed;
    const log = this.logger.child({ bridgeId: bridge.id, orgId: bridge.orgId, taskId: bridge.taskId, stepId: bridge.stepId, agent: bridge.agentKey });
    if (claimed.stepStatus !== "dispatched" || claimed.stepAttempt !== bridge.attempt) {
      // The hop was cancelled, timed out or retried before we sent it: nothing leaves.
      await this.options.bridges.closeUnsent(this.options.pool, bridge.id, false);
      log.info("foreign hop no longer in flight; not sent");
      return true;
    }
    const flags = this.options.flags;
    if (flags && (!flags.busEnabled() || !flags.coordinatorEnabled(bridge.orgId))) {
      // Switched off since the claim: left for when it is on again, not failed.
      await this.options.bridges.releaseClaim(this.options.pool, bridge.id);
      log.info("bus or the tenant's coordinator switched off; the foreign hop waits unsent");
      return false;
    }
    // Whether any request may have reached the agent, over all of the send's tries: only a send that failed before
    // anything left is reported `not-sent`, which lets the step re-send it (src/core/decide.ts).
    const reach: SendProgress = { mayHaveReached: false };
    // Tracing on only: the egress span, in the task's trace through the bridge's stored traceparent.
    const span = tracingOn() ? startEgressSpan(bridge) : undefined;
    try {
      if (this.options.egress && !this.options.egress.egressEnabled(bridge.orgId)) {
        throw new SwitchyardError(ErrorCode.PolicyDenied, `A2A egress is switched off for tenant ${bridge.orgId} (A2A_EGRESS_ENABLED); nothing was sent`, {
          details: { reason: "EGRESS_DISABLED" },
        });
      }
      const agent = await this.options.agents.find(this.options.pool, bridge.orgId, bridge.agentKey);
      if (!agent || !agent.enabled) {
        throw new SwitchyardError(ErrorCode.ForeignUnavailable, `agent ${bridge.agentKey} is not ${agent ? "enabled" : "registered"} for tenant ${bridge.orgId}`);
      }
      const deadlineMs = claimed.dueAtMs ?? this.clock() + this.options.foreign.totalTimeoutMs;
      // A call's progress heartbeats its step (call-heartbeat.ts), only while the call runs.
      const stepTimeoutMs = claimed.stepTimeoutMs ?? this.options.defaultStepTimeoutMs ?? defaultConfig.coordinator.defaultStepTimeoutMs;
      const heartbeat = new CallHeartbeat({ ...this.options, logger: log, onAttemptOver: () => this.pool.attemptOver(bridge.id) }, bridge, stepTimeoutMs);
      const ceilingMs = stepTimeoutMs * this.options.foreign.callCeilingFactor;
      const ceiling = setTimeout(
        () => call.controller.abort(callStop("CALL_CEILING", `the call ran ${ceilingMs} ms (${this.options.foreign.callCeilingFactor} step timeouts), its ceiling; it was aborted`)),
        ceilingMs,
      );
      ceiling.unref();
      const signal = call.controller.signal;
      const sent = await inSpan(span, () => this.send(agent, bridge, deadlineMs, reach, { stepTimeoutMs, progress: () => heartbeat.beat(), signal })).finally(() => {
        clearTimeout(ceiling);
        heartbeat.stop();
      });
      if (heartbeat.count > 0) log.debug({ heartbeats: heartbeat.count }, "the call's progress heartbeated its step");
      await inSpan(span, () => this.recordAnswer(bridge, sent, deadlineMs, log));
      endSpan(span, undefined, { "switchyard.delivery": sent.delivery, "switchyard.dialect": sent.dialect });
      log.info({ foreignTaskId: sent.foreignTaskId, dialect: sent.dialect, delivery: sent.delivery }, "foreign task opened");
    } catch (thrown) {
      // An abort from here is told by its reason, whatever the transport made of it.
      const stop = stopOf(call);
      const error = stop ?? thrown;
      endSpan(span, error);
      if (stop?.details.reason === "SHUTDOWN") {
        log.info("foreign call abandoned at shutdown; its lease and the sweep take over");
        return false;
      }
      if (stop?.details.reason === "ATTEMPT_OVER" || (await this.movedOn(bridge.id))) {
        // The hop moved on (cancelled, timed out, retried) before the call ended — aborted for it, or its own bound
        // at the step's due time came first: the call's failure is not the step's. An opened bridge is the sweep's
        // to close `timed_out` and to cancel on the agent, as for any hop that moved on; an unopened one is closed
        // here, as at claim time.
        if (reach.startedAs === undefined) await this.options.bridges.closeUnsent(this.options.pool, bridge.id, reach.mayHaveReached);
        log.info({ err: error, mayHaveReached: reach.mayHaveReached }, "foreign call ended after its step attempt was over; the sweep closes the hop");
        return true;
      }
      if (reach.startedAs !== undefined) {
        // The call was under way (the bridge left pending_send): its failure is what the agent did with the task.
        const why = SwitchyardError.from(error);
        log.warn({ err: error }, "foreign call failed after it started; the attempt fails");
        await applyObservation(this.options, bridge.id, { foreignTaskId: reach.startedAs, state: "failed", artifacts: [], message: why.message });
        return true;
      }
      const stepError = sendFailure(bridge.agentKey, error, reach.mayHaveReached);
      log.warn({ err: error, code: stepError.code, mayHaveReached: reach.mayHaveReached }, "foreign send failed; the attempt fails closed");
      await failSend(this.options, bridge.id, stepError, reach.mayHaveReached);
    }
    return true;
  }

  /**
   * Records the send and applies its answer (the first observation of the task: a terminal one resumes the step
   * now, exactly once, like a push would) in ONE transaction, so a send is never recorded without its answer — a
   * Message answer or an MCP result exists nowhere else. A failed write is tried once more (the answer is in hand);
   * if that fails too the error reaches sendOne's catch with the bridge as it was (still `pending_send`).
   */
  private async recordAnswer(bridge: BridgeRecord, sent: TransportSendResult, deadlineMs: number, log: Logger): Promise<void> {
    const observation = sent.observation && tellsMore(sent.observation) ? sent.observation : undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        if (!observation) return await this.recordSent(this.options.pool, bridge, sent, deadlineMs);
        await applyObservations(this.options, [{ bridgeId: bridge.id, observation }], { first: (client) => this.recordSent(client, bridge, sent, deadlineMs) });
        return;
      } catch (error) {
        // A task mismatch is the agent's contradiction, not a failed write: trying again would only repeat it.
        if (attempt >= 2 || SwitchyardError.from(error).details.reason === "A2A_TASK_MISMATCH") throw error;
        log.warn({ err: error }, "recording a foreign send's answer failed; trying once more");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  }

  /** Records that the send succeeded: the foreign task id (agreeing with one a racing push may have set) and delivery. */
  private async recordSent(db: Queryable, bridge: BridgeRecord, sent: TransportSendResult, deadlineMs: number): Promise<void> {
    const firstPoll = sent.delivery === "poll" ? this.options.foreign.pollBaseMs : null;
    const recorded = await this.options.bridges.recordSent(db, bridge.id, {
      foreignTaskId: sent.foreignTaskId,
      dialect: sent.dialect,
      deadlineMs,
      state: sent.observation?.state ?? null,
      delivery: sent.delivery,
      firstPollMs: firstPoll,
    });
    if (recorded !== sent.foreignTaskId) {
      throw new SwitchyardError(ErrorCode.Unavailable, `foreign agent ${bridge.agentKey} answered with task ${sent.foreignTaskId} but pushed for ${recorded}`, {
        details: { reason: "A2A_TASK_MISMATCH" },
      });
    }
  }

  /** The call under way (a call that IS the work): out of `pending_send` before it is made, so it is never made twice. */
  private async markStarted(bridge: BridgeRecord, foreignTaskId: string, deadlineMs: number): Promise<void> {
    const started = await this.options.bridges.markStarted(this.options.pool, bridge.id, foreignTaskId, deadlineMs);
    if (!started) throw new SwitchyardError(ErrorCode.FailedPrecondition, `bridge ${bridge.id} is no longer waiting to be sent; the call is not made`);
  }

  private async pushTarget(db: Queryable, bridge: BridgeRecord, deadlineMs: number): Promise<PushTarget> {
    const key = await this.options.linkKeys.get(db, bridge.orgId, bridge.tokenKid);
    if (!key || key.retiredAt !== null) throw new SwitchyardError(ErrorCode.FailedPrecondition, `the tenant's link key ${bridge.tokenKid} was retired before the hop was sent`);
    const t = signCallbackToken(key, { bridgeId: bridge.id, orgId: bridge.orgId, expiresAtMs: deadlineMs + this.options.foreign.callbackTokenGraceMs });
    return {
      url: `${this.options.publicUrl.replace(/\/+$/, "")}${CALLBACK_PATH_PREFIX}${bridge.id}?t=${t}`,
      token: notificationSecret(key, bridge.id),
      bearer: this.options.bearer ?? false,
    };
  }

  private async send(
    agent: ForeignAgentRecord,
    bridge: BridgeRecord,
    deadlineMs: number,
    reach: SendProgress,
    during: { stepTimeoutMs: number; progress(): void; signal: AbortSignal },
  ): Promise<TransportSendResult> {
    const transport = this.options.transports.for(agent);
    const f = this.options.foreign;
    let push: Promise<PushTarget> | undefined;
    return withRetries(
      () =>
        this.options.breakers.run(agent.orgId, agent.agentKey, () =>
          transport.send({
            agent,
            bridge,
            deadlineMs,
            stepTimeoutMs: during.stepTimeoutMs,
            progress: during.progress,
            signal: during.signal,
            reach,
            push: () => (push ??= this.pushTarget(this.options.pool, bridge, deadlineMs)),
            started: async (foreignTaskId) => {
              await this.markStarted(bridge, foreignTaskId, deadlineMs);
              reach.startedAs = foreignTaskId;
            },
          }),
        ),
      {
        attempts: f.retries,
        baseDelayMs: f.retryBaseMs,
        maxDelayMs: Math.max(f.retryBaseMs, 5_000),
        // Never a second request that may duplicate work: a call that is the work once it started (crash or not),
        // and a SendMessage that may have reached the agent (a timeout, a reset — a blocking agent holds its answer
        // while it works) unless the agent is registered idempotent. A failure before any byte left is re-tried.
        isTransient: (error) => isRetryable(error) && reach.startedAs === undefined && (!reach.mayHaveReached || agent.idempotent),
        signal: during.signal,
      },
    );
  }
}

/** Whether an answer says more than "opened" (which recordSent wrote): an end, or artifacts. */
function tellsMore(observation: ForeignObservation): boolean {
  return isTerminalForeignState(observation.state) || isInterruptedForeignState(observation.state) || observation.artifacts.length > 0;
}

/** Transient per the egress guard, or `retryable` per the A2A client's mapping. */
function isRetryable(error: unknown): boolean {
  if (!(error instanceof SwitchyardError)) return false;
  if (typeof error.details.retryable === "boolean") return error.details.retryable;
  if (typeof error.details.transient === "boolean") return error.details.transient;
  // An Agent Card that could not be fetched: worth another try when what failed underneath was transient.
  return error.details.reason === "CARD_UNREACHABLE" && (isTransientFailure(error.cause) || Number(error.details.status) >= 500);
}


/**
 * The step error of a failed send. Retryable only when nothing reached the agent and the failure may pass (a
 * transient card or network failure, an open breaker): only then may the step re-send (see `failSend`).
 */
function sendFailure(agentKey: string, error: unknown, mayHaveReached: boolean): { code: string; message: string; retryable: boolean } {
  const e = SwitchyardError.from(error);
  const reason = typeof e.details.reason === "string" ? e.details.reason : undefined;
  const code =
    reason === EgressReason.BreakerOpen
      ? "FOREIGN_BREAKER_OPEN"
      : reason === "EGRESS_DISABLED"
        ? "POLICY_DENIED"
        : e.code === ErrorCode.ForeignUnavailable
          ? e.code
          : "FOREIGN_SEND_FAILED";
  const passing = reason === EgressReason.BreakerOpen || isRetryable(error);
  return { code, message: `could not open a task at foreign agent ${agentKey}${reason ? ` (${reason})` : ""}: ${e.message}`, retryable: !mayHaveReached && passing };
}

/**
 * The post-commit half of a foreign hop: sends each `pending_send` bridge through its agent's transport
 * (transport.ts: A2A or MCP, picked by the registry's protocol). The sender itself is transport-blind: it claims,
 * retries, breaks, records and resumes; what "sending" means — and what must be checked first — is the transport's.
 *
 * A bridge is claimed with `FOR UPDATE SKIP LOCKED` and a lease (`claimed_until`), so several coordinators share the
 * work and a crashed sender's bridge is picked up again after the lease. The send itself runs OUTSIDE any
 * transaction, so a push that races the response is never blocked on our row lock: it finds the bridge by id and
 * records the foreign task id itself; the send's answer must then agree.
 *
 * Before sending, the step attempt must still be in flight (a cancelled or timed-out hop sends nothing). Then
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
import { defaultConfig, type ForeignConfig } from "../config.js";
import type { DependencyHealth } from "../dependency-health.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Queryable } from "../store/db.js";
import { getLinkKey } from "../approvals/link-keys.js";
import { BRIDGE_COLUMNS_OF_B, toBridge, type BridgeRecord } from "./bridge-store.js";
import { notificationSecret, signCallbackToken } from "./callback-token.js";
import { tenantSqlClause, tenantSqlFilter, type CoordinatorFlags } from "../flags/flag-types.js";
import { applyObservation, applyObservations, failSend, type BridgeResumeDeps } from "./resume.js";
import { CallHeartbeat } from "./call-heartbeat.js";
import type { PushTarget } from "./a2a/client.js";
import { isInterruptedForeignState, isTerminalForeignState } from "./a2a/task-state.js";
import type { ForeignObservation } from "./bridge-transition.js";
import type { ForeignTransports, TransportSendResult } from "./transport.js";
import { endSpan, inSpan, startEgressSpan } from "../telemetry/foreign-spans.js";
import { tracingOn } from "../telemetry/tracing.js";
import { findForeignAgent, type ForeignAgentRecord } from "./registry.js";
import { EgressReason, isTransientFailure, withRetries, type BreakerRegistry } from "./egress/index.js";

export const CALLBACK_PATH_PREFIX = "/api/v1/a2a/callback/";

export interface ForeignSenderOptions extends BridgeResumeDeps {
  transports: ForeignTransports;
  breakers: BreakerRegistry;
  foreign: ForeignConfig;
  /** Base URL agents reach our callback route at (SWITCHYARD_PUBLIC_URL). */
  publicUrl: string;
  /** Bridges claimed per run. @defaultValue 20 */
  batchSize?: number;
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

interface Claimed {
  bridge: BridgeRecord;
  stepStatus: string | null;
  stepAttempt: number | null;
  dueAtMs: number | null;
  /** The step's own timeout from its workflow definition (null: the coordinator's default applies). */
  stepTimeoutMs: number | null;
}

export class ForeignSender {
  private readonly logger: Logger;
  private readonly clock: () => number;
  private active = false;
  private running: Promise<number> | undefined;
  private again = false;

  constructor(private readonly options: ForeignSenderOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "a2a-sender" });
    this.clock = options.clock ?? Date.now;
  }

  /**
   * Asks for a run soon (after a hop wrote a bridge). Only in a process whose loop runs the sender (a coordinator),
   * so a short-lived CLI process never starts a send it would abandon.
   */
  kick(): void {
    if (!this.active) return;
    setTimeout(
      () =>
        void this.run().catch((error: unknown) => {
          // An outage is the process's DependencyHealth's to log (once); the periodic run retries the bridge.
          if (this.options.health?.absorb(error)) return;
          this.logger.error({ err: error }, "foreign sender failed");
        }),
      10,
    );
  }

  /** Sends every claimable bridge; returns how many were handled. One run at a time per process. */
  run(): Promise<number> {
    this.active = true;
    if (this.options.flags && !this.options.flags.busEnabled()) return Promise.resolve(0);
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      let total = 0;
      try {
        do {
          this.again = false;
          for (;;) {
            const claimed = await this.claim();
            if (claimed.length === 0) break;
            const handled = (await Promise.all(claimed.map((c) => this.sendOne(c)))).filter(Boolean).length;
            total += handled;
            // Every claim handed back (switched off meanwhile): claiming again now would only find them again.
            if (handled === 0) break;
          }
        } while (this.again);
      } finally {
        this.running = undefined;
      }
      return total;
    })();
    return this.running;
  }

  private async claim(): Promise<Claimed[]> {
    const tenants = tenantSqlFilter(this.options.flags?.coordinatorTenants?.());
    if (tenants.none) return [];
    // Each attempt may take a card fetch and a send, each up to the total timeout, plus backoff between attempts.
    const f = this.options.foreign;
    const leaseMs = this.options.leaseMs ?? f.retries * (2 * f.totalTimeoutMs + 5_000) + 30_000;
    const { rows } = await this.options.pool.query(
      `WITH picked AS (
         SELECT id FROM a2a_bridge WHERE status = 'pending_send' AND foreign_task_id IS NULL
           AND (claimed_until IS NULL OR claimed_until < now())
           AND ${tenantSqlClause("org_id", 3)}
         ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED)
       -- A SendMessage may last until the step is due (a blocking agent answers when done), so the claim holds at
       -- least that long: another sender must not re-send while this one waits.
       UPDATE a2a_bridge b SET claimed_until = GREATEST(now() + make_interval(secs => $2::double precision / 1000),
           (SELECT to_timestamp((s.due_at_ms + $2::double precision) / 1000.0) FROM steps s WHERE s.task_id = b.task_id AND s.step_id = b.step_id))
       FROM picked WHERE b.id = picked.id
       RETURNING ${BRIDGE_COLUMNS_OF_B},
         (SELECT s.status FROM steps s WHERE s.task_id = b.task_id AND s.step_id = b.step_id) AS step_status,
         (SELECT s.attempt FROM steps s WHERE s.task_id = b.task_id AND s.step_id = b.step_id) AS step_attempt,
         (SELECT s.due_at_ms FROM steps s WHERE s.task_id = b.task_id AND s.step_id = b.step_id) AS due_at_ms,
         -- The step's timeout as the coordinator reads it (hops.ts stepTimeoutMs): the workflow step of that id.
         (SELECT (d->>'timeoutMs')::double precision FROM tasks t
            JOIN workflows w ON w.org_id = t.org_id AND w.name = t.workflow_name AND w.version = t.workflow_version
            CROSS JOIN LATERAL jsonb_array_elements(w.definition->'steps') d
          WHERE t.id = b.task_id AND d->>'id' = b.step_id LIMIT 1) AS step_timeout_ms`,
      [this.options.batchSize ?? 20, leaseMs, tenants.only, tenants.except],
    );
    return rows.map((row) => ({
      bridge: toBridge(row),
      stepStatus: (row.step_status as string | null) ?? null,
      stepAttempt: (row.step_attempt as number | null) ?? null,
      dueAtMs: row.due_at_ms === null ? null : Number(row.due_at_ms),
      stepTimeoutMs: row.step_timeout_ms === null ? null : Number(row.step_timeout_ms),
    }));
  }

  /** Sends one claimed bridge (or closes or fails it); false when it was handed back unsent, to wait. */
  private async sendOne(claimed: Claimed): Promise<boolean> {
    const { bridge } = claimed;
    const log = this.logger.child({ bridgeId: bridge.id, orgId: bridge.orgId, taskId: bridge.taskId, stepId: bridge.stepId, agent: bridge.agentKey });
    if (claimed.stepStatus !== "dispatched" || claimed.stepAttempt !== bridge.attempt) {
      // The hop was cancelled, timed out or retried before we sent it: nothing leaves.
      await this.options.pool.query(
        `UPDATE a2a_bridge SET status = 'timed_out', last_state = 'not_sent', resolved_at = now(), updated_at = now(), claimed_until = NULL
         WHERE id = $1 AND status = 'pending_send'`,
        [bridge.id],
      );
      log.info("foreign hop no longer in flight; not sent");
      return true;
    }
    const flags = this.options.flags;
    if (flags && (!flags.busEnabled() || !flags.coordinatorEnabled(bridge.orgId))) {
      // Switched off since the claim: left for when it is on again, not failed.
      await this.options.pool.query("UPDATE a2a_bridge SET claimed_until = NULL WHERE id = $1 AND status = 'pending_send'", [bridge.id]);
      log.info("bus or the tenant's coordinator switched off; the foreign hop waits unsent");
      return false;
    }
    // Whether any request may have reached the agent, over all of the send's tries: only a send that failed before
    // anything left is reported `not-sent`, which lets the step re-send it (src/coordinator/decide.ts).
    const reach: SendProgress = { mayHaveReached: false };
    // Tracing on only: the egress span, in the task's trace through the bridge's stored traceparent.
    const span = tracingOn() ? startEgressSpan(bridge) : undefined;
    try {
      if (this.options.egress && !this.options.egress.egressEnabled(bridge.orgId)) {
        throw new SwitchyardError(ErrorCode.PolicyDenied, `A2A egress is switched off for tenant ${bridge.orgId} (A2A_EGRESS_ENABLED); nothing was sent`, {
          details: { reason: "EGRESS_DISABLED" },
        });
      }
      const agent = await findForeignAgent(this.options.pool, bridge.orgId, bridge.agentKey);
      if (!agent || !agent.enabled) {
        throw new SwitchyardError(ErrorCode.ForeignUnavailable, `agent ${bridge.agentKey} is not ${agent ? "enabled" : "registered"} for tenant ${bridge.orgId}`);
      }
      const deadlineMs = claimed.dueAtMs ?? this.clock() + this.options.foreign.totalTimeoutMs;
      // A call's progress heartbeats its step (call-heartbeat.ts), only while the call runs.
      const stepTimeoutMs = claimed.stepTimeoutMs ?? this.options.defaultStepTimeoutMs ?? defaultConfig.coordinator.defaultStepTimeoutMs;
      const heartbeat = new CallHeartbeat({ ...this.options, logger: log }, bridge, stepTimeoutMs);
      const sent = await inSpan(span, () => this.send(agent, bridge, deadlineMs, reach, { stepTimeoutMs, progress: () => heartbeat.beat() })).finally(() => heartbeat.stop());
      if (heartbeat.count > 0) log.debug({ heartbeats: heartbeat.count }, "the call's progress heartbeated its step");
      await inSpan(span, () => this.recordAnswer(bridge, sent, deadlineMs, log));
      endSpan(span, undefined, { "switchyard.delivery": sent.delivery, "switchyard.dialect": sent.dialect });
      log.info({ foreignTaskId: sent.foreignTaskId, dialect: sent.dialect, delivery: sent.delivery }, "foreign task opened");
    } catch (error) {
      endSpan(span, error);
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
    const { rows } = await db.query<{ foreign_task_id: string | null }>(
      `UPDATE a2a_bridge SET foreign_task_id = COALESCE(foreign_task_id, $2), dialect = $3, claimed_until = NULL, updated_at = now(),
         -- A call's progress may have moved the deadline on (call-heartbeat.ts): never back.
         deadline_ms = GREATEST(deadline_ms, $4),
         status = CASE WHEN status = 'pending_send' THEN 'dispatched' ELSE status END,
         -- A completed push that raced the answer (waiting for its GetTask confirmation) keeps its state.
         last_state = CASE WHEN status = 'pending_send' AND last_state IS DISTINCT FROM 'completed' THEN $5 ELSE last_state END,
         delivery = $6, sent_at = COALESCE(sent_at, now()),
         next_poll_at = CASE WHEN $7::double precision IS NULL THEN next_poll_at ELSE now() + make_interval(secs => $7::double precision / 1000) END
       WHERE id = $1 RETURNING foreign_task_id`,
      [bridge.id, sent.foreignTaskId, sent.dialect, deadlineMs, sent.observation?.state ?? null, sent.delivery, firstPoll],
    );
    if (rows[0]?.foreign_task_id !== sent.foreignTaskId) {
      throw new SwitchyardError(ErrorCode.Unavailable, `foreign agent ${bridge.agentKey} answered with task ${sent.foreignTaskId} but pushed for ${rows[0]?.foreign_task_id}`, {
        details: { reason: "A2A_TASK_MISMATCH" },
      });
    }
  }

  /** The call under way (a call that IS the work): out of `pending_send` before it is made, so it is never made twice. */
  private async markStarted(bridge: BridgeRecord, foreignTaskId: string, deadlineMs: number): Promise<void> {
    const { rowCount } = await this.options.pool.query(
      `UPDATE a2a_bridge SET foreign_task_id = $2, status = 'dispatched', last_state = 'submitted', deadline_ms = $3, delivery = 'call',
         sent_at = now(), claimed_until = NULL, updated_at = now()
       WHERE id = $1 AND status = 'pending_send'`,
      [bridge.id, foreignTaskId, deadlineMs],
    );
    if (rowCount !== 1) throw new SwitchyardError(ErrorCode.FailedPrecondition, `bridge ${bridge.id} is no longer waiting to be sent; the call is not made`);
  }

  private async pushTarget(db: Queryable, bridge: BridgeRecord, deadlineMs: number): Promise<PushTarget> {
    const key = await getLinkKey(db, bridge.orgId, bridge.tokenKid);
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
    during: { stepTimeoutMs: number; progress(): void },
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

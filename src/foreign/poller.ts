/**
 * The poller: asks agents for the state of their tasks when no push will tell us (GetTask / `tasks/get` through
 * the agent's transport, guarded channel and breaker).
 *
 * It serves two kinds of open bridges, both marked by `next_poll_at`:
 * - polled ones (`delivery = 'poll'`: the registry said so, or the Agent Card offers no push): the sender makes the
 *   first GetTask due `pollBaseMs` after the send, and each poll that leaves the task open schedules the next with
 *   backoff, `pollBaseMs * 2^polls` capped at `pollMaxMs`, and never later than the step attempt's deadline;
 * - pushed ones whose `completed` push came without the artifacts known for sure (bridge-transition.ts): a GetTask
 *   is due at once. When that GetTask cannot be answered (the agent keeps no tasks, errors) `CONFIRM_TRIES` times
 *   — a call the open breaker refused is no try — the bridge resolves with what the pushes collected, if they
 *   collected anything. With nothing collected it is never resolved as an empty success: it is asked again (with
 *   backoff) until the step's deadline, and the step then times out like any hop that did not answer.
 *
 * Each claim takes at most `PER_AGENT_CLAIM` due bridges of one (tenant, agent), so polling is bounded per agent.
 *
 * What a poll learns is applied like a push (resume.ts `applyObservation`), so a bridge resolves once however it was
 * learnt; resolving clears `next_poll_at`. Bridges are claimed with `FOR UPDATE SKIP LOCKED` and the claim moves
 * `next_poll_at` past the poll's own timeout (and counts it in `polls`), so several coordinators share the work and
 * a poller that dies mid-call leaves the bridge to be polled again after that. With the bus off nothing is polled;
 * a tenant whose coordinator is switched off is left alone, like the sender and the sweep do.
 */
import type { ForeignConfig } from "../config/index.js";
import { tenantSqlFilter, type CoordinatorFlags } from "../flags/flag-types.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import { isTerminalForeignState, type ForeignTaskState } from "./a2a/task-state.js";
import type { BridgeRecord } from "../store/bridges/bridge-store.js";
import { EgressReason, type BreakerRegistry } from "./egress/index.js";
import { SwitchyardError } from "../errors.js";
import type { ForeignAgentStore } from "../store/foreign/foreign-agent-store.js";
import { applyObservation, type BridgeResumeDeps } from "./resume.js";
import { endSpan, inSpan, startPollSpan } from "../telemetry/foreign-spans.js";
import { tracingOn } from "../telemetry/tracing.js";
import type { ForeignTransports } from "./transport.js";

/** Failed GetTasks after which a bridge whose task reported its end resolves with what was collected. */
export const CONFIRM_TRIES = 3;

/** Due bridges of one (tenant, agent) polled per claim at most. */
export const PER_AGENT_CLAIM = 8;

export interface ForeignPollerOptions extends BridgeResumeDeps {
  /** The foreign agent registry's port (`runtime.stores.foreignAgents`): where each bridge's agent is looked up. */
  agents: Pick<ForeignAgentStore, "find">;
  transports: ForeignTransports;
  breakers: BreakerRegistry;
  foreign: ForeignConfig;
  /** Bridges claimed per run. @defaultValue 50 */
  batchSize?: number;
  /** Bridges of one (tenant, agent) claimed per claim. @defaultValue PER_AGENT_CLAIM */
  perAgent?: number;
  flags?: CoordinatorFlags;
  metrics?: Pick<Metrics, "a2aPolls" | "a2aLateArtifacts">;
}

export type PollResult = "resolved" | "pending" | "failed" | "gave_up";

export class ForeignPoller {
  private readonly logger: Logger;

  constructor(private readonly options: ForeignPollerOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "a2a-poller" });
  }

  /** Polls every bridge that is due (claimed in batches); answers how many were polled. */
  async run(signal?: AbortSignal): Promise<number> {
    if (this.options.flags && !this.options.flags.busEnabled()) return 0;
    let total = 0;
    for (;;) {
      const claimed = await this.claim();
      if (claimed.length === 0) return total;
      const results = await Promise.all(claimed.map((bridge) => this.pollOne(bridge, signal)));
      for (const result of results) this.options.metrics?.a2aPolls.inc({ result });
      total += claimed.length;
      if (claimed.length < (this.options.batchSize ?? 50) || signal?.aborted) return total;
    }
  }

  /** Backoff after `polls` polls: `pollBaseMs * 2^polls`, capped at `pollMaxMs`. */
  backoffMs(polls: number): number {
    const { pollBaseMs, pollMaxMs } = this.options.foreign;
    return Math.min(pollMaxMs, pollBaseMs * 2 ** Math.min(polls, 30));
  }

  private async claim(): Promise<BridgeRecord[]> {
    const tenants = tenantSqlFilter(this.options.flags?.coordinatorTenants?.());
    if (tenants.none) return [];
    // The claim holds the bridge for as long as one GetTask may take (card fetch + call); the schedule proper is
    // written when the poll ends.
    const leaseMs = 2 * this.options.foreign.totalTimeoutMs + 1_000;
    return this.options.bridges.claimDuePolls(this.options.pool, {
      limit: this.options.batchSize ?? 50,
      leaseMs,
      perAgent: this.options.perAgent ?? PER_AGENT_CLAIM,
      tenants: { only: tenants.only, except: tenants.except },
    });
  }

  private async pollOne(bridge: BridgeRecord, signal: AbortSignal | undefined): Promise<PollResult> {
    if (!tracingOn()) return this.pollBridge(bridge, signal);
    // Tracing on: the poll (its GetTask, the RESULT it may write) joins the task's trace through the bridge.
    const span = startPollSpan(bridge);
    const result = await inSpan(span, () => this.pollBridge(bridge, signal)).catch((error: unknown) => {
      endSpan(span, error);
      throw error;
    });
    endSpan(span, undefined, { "switchyard.outcome": result });
    return result;
  }

  private async pollBridge(bridge: BridgeRecord, signal: AbortSignal | undefined): Promise<PollResult> {
    const log = this.logger.child({ bridgeId: bridge.id, orgId: bridge.orgId, taskId: bridge.taskId, stepId: bridge.stepId, agent: bridge.agentKey });
    // Set when the agent said (by push) that the task completed and only its artifacts are being confirmed.
    const ended = isTerminalForeignState(bridge.lastState as ForeignTaskState) ? (bridge.lastState as ForeignTaskState) : undefined;
    try {
      const agent = await this.options.agents.find(this.options.pool, bridge.orgId, bridge.agentKey);
      if (!agent) throw new Error(`agent ${bridge.agentKey} is no longer registered`);
      const transport = this.options.transports.for(agent);
      const observation = await this.options.breakers.run(bridge.orgId, bridge.agentKey, () => transport.poll(agent, bridge, signal));
      if (!observation) throw new Error("the transport has nothing to poll for this bridge");
      const outcome = await applyObservation(this.options, bridge.id, observation);
      // `ignored`: resolved meanwhile (a push won); `unknown`: the row is gone. Either way nothing to schedule.
      if (outcome === "resumed" || outcome === "ignored" || outcome === "unknown") {
        if (outcome === "resumed") log.info({ state: observation.state, polls: bridge.polls }, "foreign task resolved by polling");
        return "resolved";
      }
      if (this.mayGiveUp(bridge, ended) && (await this.giveUp(bridge, ended!, log, `the agent still reports ${observation.state ?? "no state"}`))) return "gave_up";
      await this.reschedule(bridge);
      return "pending";
    } catch (error) {
      // A call the open breaker refused never reached the agent: it is no try at confirming (the claim counted it).
      const refused = isBreakerOpen(error);
      if (refused) await this.uncount(bridge).catch((e: unknown) => log.warn({ err: e }, "uncounting a refused poll failed"));
      if (!refused && this.mayGiveUp(bridge, ended)) {
        if (await this.giveUp(bridge, ended!, log, error)) return "gave_up";
      } else {
        // Left open and asked again later; the step's own deadline bounds how long.
        log.warn({ err: error, polls: bridge.polls, breakerOpen: refused }, "polling a foreign task failed");
      }
      await this.reschedule(bridge, refused ? bridge.polls - 1 : bridge.polls).catch((e: unknown) => log.warn({ err: e }, "rescheduling a foreign poll failed; the claim's lease expires instead"));
      return "failed";
    }
  }

  /**
   * Whether a bridge whose task reported its end may resolve without the confirmation: after CONFIRM_TRIES tries,
   * and only with artifacts collected. With none, resolving would be a success with empty output (what the agent
   * made is unknown), so it keeps being asked until the step's deadline, when the step times out instead.
   */
  private mayGiveUp(bridge: BridgeRecord, ended: ForeignTaskState | undefined): boolean {
    return ended !== undefined && bridge.polls >= CONFIRM_TRIES && bridge.artifacts.length > 0;
  }

  /** Takes back the claim's count of a poll that was never made. */
  private async uncount(bridge: BridgeRecord): Promise<void> {
    await this.options.bridges.uncountPoll(this.options.pool, bridge.id);
  }

  /** The agent told us the task ended but cannot show it: resolve with what its pushes brought, never strand. */
  private async giveUp(bridge: BridgeRecord, ended: ForeignTaskState, log: Logger, why: unknown): Promise<boolean> {
    log.warn({ err: why, polls: bridge.polls, state: ended, artifacts: bridge.artifacts.length }, "confirming a finished foreign task failed; resolving with the artifacts collected");
    try {
      await applyObservation(this.options, bridge.id, { foreignTaskId: bridge.foreignTaskId!, state: ended, artifacts: [], complete: true });
      return true;
    } catch (error) {
      log.warn({ err: error }, "resolving a finished foreign task failed; the next poll tries again");
      return false;
    }
  }

  /**
   * The next poll, if the bridge is still open and nobody re-scheduled it meanwhile (a push asking for a GetTask now
   * wins): backoff by the polls made, never past the step attempt's deadline while it lies ahead.
   */
  private async reschedule(bridge: BridgeRecord, polls = bridge.polls): Promise<void> {
    await this.options.bridges.reschedulePoll(this.options.pool, bridge.id, this.backoffMs(Math.max(0, polls)));
  }
}

/** Whether the breaker refused the call (nothing was sent). */
function isBreakerOpen(error: unknown): boolean {
  return error instanceof SwitchyardError && error.details.reason === EgressReason.BreakerOpen;
}

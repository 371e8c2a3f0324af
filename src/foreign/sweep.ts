/**
 * The reconciliation sweep: a push that never comes never strands a step.
 *
 * 1. Bridges whose step attempt has moved on — the engine's step timeout fired (audited `timeout`, then retried or
 *    failed closed), or the task was cancelled — are marked `timed_out`, and `CancelTask` is sent to the agent
 *    best-effort (its answer changes nothing here); each cancel tried is audited `foreign_cancel` (sent / failed).
 *    This covers every transport: a timed-out MCP hop's bridge (delivery `call`) is closed here too (MCP's cancel
 *    sends nothing, so nothing is audited for it).
 * 2. Pushed A2A bridges still open (`dispatched` / `working`) with no news for `sweepAfterMs` are polled with
 *    GetTask / `tasks/get` through the agent's guarded channel and breaker; what the agent answers is applied exactly
 *    like a push (resume.ts), so a terminal state resumes the step once however it was learnt. Polled bridges are
 *    the poller's (poller.ts), and an MCP bridge (delivery `call`) has nothing to poll: its answer is the call's own.
 * Rows are claimed with `FOR UPDATE SKIP LOCKED`, so several coordinators may sweep at once.
 */
import type { ForeignConfig } from "../config/index.js";
import { tenantSqlFilter, type CoordinatorFlags } from "../flags/flag-types.js";
import { silentLogger, type Logger } from "../logger.js";
import type { BridgeRecord, BridgeTenants, MovedOnBridge } from "../store/bridges/bridge-store.js";
import type { BreakerRegistry } from "./egress/index.js";
import { appendAudit } from "../store/audit/postgres-audit-store.js";
import { withTransactionRetry } from "../store/db.js";
import { applyObservation, type BridgeResumeDeps } from "./resume.js";
import type { ForeignAgentStore } from "../store/foreign/foreign-agent-store.js";
import { isTerminalForeignState, type ForeignTaskState } from "./a2a/task-state.js";
import type { ForeignTransports } from "./transport.js";

export interface ForeignSweepOptions extends BridgeResumeDeps {
  /** The foreign agent registry's port (`runtime.stores.foreignAgents`): where each bridge's agent is looked up. */
  agents: Pick<ForeignAgentStore, "find">;
  transports: ForeignTransports;
  breakers: BreakerRegistry;
  foreign: ForeignConfig;
  /** Bridges handled per pass of each kind. @defaultValue 100 */
  batchSize?: number;
  /** As for the sender: nothing with the bus off; a tenant whose coordinator is off is left alone. @defaultValue all on */
  flags?: CoordinatorFlags;
}

export interface SweepReport {
  timedOut: number;
  polled: number;
  resumed: number;
}

export class ForeignSweep {
  private readonly logger: Logger;

  constructor(private readonly options: ForeignSweepOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "a2a-sweep" });
  }

  async run(): Promise<SweepReport> {
    const report: SweepReport = { timedOut: 0, polled: 0, resumed: 0 };
    if (this.options.flags && !this.options.flags.busEnabled()) return report;
    const stale = await this.closeMovedOn();
    report.timedOut = stale.length;
    // Nothing to cancel for a task that had already ended (e.g. its `completed` was waiting for a GetTask
    // confirmation), nor for one that never got a foreign id.
    await Promise.all(stale.filter((m) => m.bridge.foreignTaskId !== null && !isTerminalForeignState(m.bridge.lastState as ForeignTaskState)).map((m) => this.cancelQuietly(m.bridge, m.cancelled)));
    for (const bridge of await this.claimQuiet()) {
      report.polled++;
      if (await this.poll(bridge)) report.resumed++;
    }
    return report;
  }

  /** The tenants served now (only, except); `only: []` matches none. */
  private tenants(): BridgeTenants {
    const { only, except } = tenantSqlFilter(this.options.flags?.coordinatorTenants?.());
    return { only, except };
  }

  /**
   * Marks open bridges whose step attempt is no longer in flight as timed out; returns them, each with whether it
   * moved on because the step or its task was cancelled (else its attempt timed out or was superseded). A
   * `pending_send` bridge that already has a foreign task id (a push named it before the send was recorded) is the
   * agent's too, so it is closed (and cancelled) like a dispatched one; one without is the sender's to close unsent.
   */
  private async closeMovedOn(): Promise<MovedOnBridge[]> {
    return withTransactionRetry(this.options.pool, async (client) => {
      const moved = await this.options.bridges.lockMovedOn(client, this.options.batchSize ?? 100, this.tenants());
      const bridges = moved.map((m) => m.bridge);
      if (bridges.length > 0) {
        await this.options.bridges.markTimedOut(client, bridges.map((b) => b.id));
        for (const b of bridges) this.logger.info({ bridgeId: b.id, orgId: b.orgId, taskId: b.taskId, stepId: b.stepId }, "foreign hop timed out: bridge closed");
      }
      return moved;
    });
  }

  /** Open pushed (or not yet known) bridges with no news for `sweepAfterMs`; touching `updated_at` keeps the next pass from polling them again at once. */
  private async claimQuiet(): Promise<BridgeRecord[]> {
    return this.options.bridges.claimQuiet(this.options.pool, { limit: this.options.batchSize ?? 100, quietMs: this.options.foreign.sweepAfterMs, tenants: this.tenants() });
  }

  private async poll(bridge: BridgeRecord): Promise<boolean> {
    const log = this.logger.child({ bridgeId: bridge.id, orgId: bridge.orgId, agent: bridge.agentKey });
    try {
      const agent = await this.options.agents.find(this.options.pool, bridge.orgId, bridge.agentKey);
      if (!agent) return false;
      const observation = await this.options.breakers.run(bridge.orgId, bridge.agentKey, () => this.options.transports.for(agent).poll(agent, bridge));
      if (!observation) return false;
      const outcome = await applyObservation(this.options, bridge.id, observation);
      if (outcome === "resumed") log.info({ state: observation.state }, "foreign task resolved by the sweep");
      return outcome === "resumed";
    } catch (error) {
      // Left open: the next pass tries again, and the step's own deadline bounds how long.
      log.warn({ err: error }, "polling a foreign task failed");
      return false;
    }
  }

  private async cancelQuietly(bridge: BridgeRecord, cancelled: boolean): Promise<void> {
    let sent = false;
    let failure: string | undefined;
    try {
      const agent = await this.options.agents.find(this.options.pool, bridge.orgId, bridge.agentKey);
      if (!agent) return;
      sent = await this.options.breakers.run(bridge.orgId, bridge.agentKey, () => this.options.transports.for(agent).cancel(agent, bridge));
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
      this.logger.info({ err: error, bridgeId: bridge.id, orgId: bridge.orgId, taskId: bridge.taskId, stepId: bridge.stepId }, "cancelling a timed-out foreign hop failed (best effort)");
    }
    // Only a cancel we tried to send is audited (a transport with nothing to cancel sends nothing).
    if (sent || failure !== undefined) await this.auditCancel(bridge, cancelled, failure);
  }

  /**
   * One `foreign_cancel` row on the tenant's chain, in a transaction of its own: the bridge was closed (and the
   * step's `timeout` row written) before the request left, so this records only what we asked of the agent.
   */
  private async auditCancel(bridge: BridgeRecord, cancelled: boolean, failure: string | undefined): Promise<void> {
    try {
      await withTransactionRetry(this.options.pool, (client) =>
        appendAudit(client, [
          {
            orgId: bridge.orgId,
            action: "foreign_cancel",
            actor: "coordinator",
            destination: `foreign:${bridge.agentKey}`,
            verdict: failure === undefined ? "sent" : "failed",
            // Why we asked: the task (or step) was cancelled, or the attempt timed out. The row follows the call
            // (it records what we asked of the agent, after the bridge was closed), so it is written once the
            // call's outcome is known.
            rule: cancelled ? "builtin:cancel" : "builtin:timeout",
            reason: failure === undefined ? `CancelTask sent for foreign task ${bridge.foreignTaskId}` : `CancelTask for foreign task ${bridge.foreignTaskId} failed: ${failure.slice(0, 500)}`,
            payloadHash: "",
            cost: 0,
            taskId: bridge.taskId,
            stepId: bridge.stepId,
            envelopeId: bridge.id,
            atMs: (this.options.clock ?? Date.now)(),
          },
        ]),
      );
    } catch (error) {
      this.logger.warn({ err: error, bridgeId: bridge.id, orgId: bridge.orgId, taskId: bridge.taskId, stepId: bridge.stepId }, "auditing a foreign cancel failed");
    }
  }
}

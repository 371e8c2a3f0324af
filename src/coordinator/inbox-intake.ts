/**
 * The coordinator's intake of inbox entries: authenticate (bus MAC), decode, refuse what must never be applied,
 * move the entries of tenants switched off to their hold streams, and apply the rest through the engine in one
 * transaction (per task when that fails). What is refused is dead-lettered with its reason and counted, never
 * acknowledged as applied.
 */
import type { EnvelopeVerifier } from "../bus/auth/bus-auth.js";
import { COORDINATOR_STREAM, type Bus, type BusEntry } from "../bus/bus.js";
import { isSwitchyardError } from "../errors.js";
import type { TenantHold } from "../flags/tenant-hold.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import type { Pool } from "../store/db.js";
import type { Engine } from "./engine.js";
import { envelopeToEvent } from "./envelopes.js";
import { findForeignTaskClaims } from "./inbox-claims.js";
import { applyIsolating, type DecodedEntry } from "./isolated-apply.js";
import type { OutboxRow } from "./outbox.js";

export const COORDINATOR_GROUP = "coordinator";

/** A committed batch: the inbox entries to acknowledge and the outbox rows to publish. */
export interface AppliedBatch {
  ackIds: string[];
  outbox: OutboxRow[];
}

export interface InboxIntakeOptions {
  pool: Pool;
  bus: Bus;
  engine: Engine;
  verifier: EnvelopeVerifier;
  logger: Logger;
  metrics?: Metrics;
  /** The coordinator's tenant hold (flags), once built. */
  hold: () => TenantHold<AppliedBatch> | undefined;
  tenantOn: (orgId: string) => boolean;
}

export class InboxIntake {
  constructor(private readonly options: InboxIntakeOptions) {}

  /**
   * Decodes and applies a batch in one transaction (per task when that fails, see isolated-apply.ts); undefined
   * when no entry was usable (all dead-lettered or held). Inbox entries of tenants switched off are moved to their
   * hold streams first.
   */
  async apply(all: readonly BusEntry[], stream: string = COORDINATOR_STREAM): Promise<AppliedBatch | undefined> {
    const { bus } = this.options;
    // Authenticate and decode first: nothing unauthenticated is applied, nor held for later.
    const accepted = new Map<string, DecodedEntry>();
    for (const entry of all) {
      const verdict = this.options.verifier.verify(entry.raw, entry.envelope);
      if (!verdict.ok) {
        await this.refuse(stream, entry, verdict.reason, `UNAUTHENTICATED: ${verdict.message}`);
        continue;
      }
      try {
        const inbound = envelopeToEvent(entry.envelope, verdict.sender);
        accepted.set(entry.id, { entryId: entry.id, input: { ...inbound, dedupe: inbound.event.type !== "heartbeat", createdAtMs: Number(entry.envelope.createdAtMs) || undefined } });
      } catch (error) {
        if (!isSwitchyardError(error)) throw error;
        this.options.logger.warn({ err: error, envelopeId: entry.envelope.id, orgId: entry.envelope.orgId }, "inbound envelope refused; dead-lettered");
        this.options.metrics?.deadLetters.inc({ stream, reason: error.code });
        await bus.deadLetter(stream, COORDINATOR_GROUP, entry.id, entry.raw, `${error.code}: ${error.message}`);
      }
    }
    let entries: readonly BusEntry[] = all.filter((entry) => accepted.has(entry.id));
    const hold = this.options.hold();
    if (stream === COORDINATOR_STREAM && hold) entries = await hold.holdDisabled(await this.refuseUnknownHeld(entries));
    const decoded = entries.map((entry) => accepted.get(entry.id)!);
    if (decoded.length === 0) return undefined;
    this.options.metrics?.batchSize.observe(decoded.length);
    // Entries that were not applied are not acknowledged: redelivered (reclaim), dead-lettered after N tries.
    const applied = await applyIsolating({ engine: this.options.engine, pool: this.options.pool, logger: this.options.logger }, decoded);
    // Committed without them: refused entries (unknown task, another tenant's task, a sender that is not the step's
    // destination) changed nothing and go to the dead letters instead of being acknowledged.
    const byId = new Map(entries.map((entry) => [entry.id, entry]));
    for (const refused of applied.refused) await this.refuse(stream, byId.get(refused.entryId)!, refused.label, `REFUSED: ${refused.reason}`);
    for (const input of applied.inputs) this.options.metrics?.events.inc({ type: input.event.type, outcome: "seen" });
    return { ackIds: applied.ackIds, outbox: applied.outbox };
  }

  /**
   * Entries of tenants switched off would be held; those naming a task that does not exist, or that belongs to
   * another tenant (a tenant that does not exist has no tasks), are refused now instead of held for nobody.
   */
  private async refuseUnknownHeld(entries: readonly BusEntry[]): Promise<BusEntry[]> {
    const off = entries.filter((entry) => !this.options.tenantOn(entry.envelope.orgId));
    if (off.length === 0) return [...entries];
    const claims = await findForeignTaskClaims(this.options.pool, off.map((entry) => entry.envelope));
    const refused = new Set<string>();
    for (const entry of off) {
      const claim = claims.get(entry.envelope.id);
      if (!claim) continue;
      refused.add(entry.id);
      await this.refuse(COORDINATOR_STREAM, entry, claim.label, `REFUSED: ${claim.reason}`);
    }
    return entries.filter((entry) => !refused.has(entry.id));
  }

  /** Dead-letters an inbox entry that must not be applied, with the reason; counted by reason. */
  private async refuse(stream: string, entry: BusEntry, label: string, reason: string): Promise<void> {
    const { envelope } = entry;
    this.options.logger.warn({ orgId: envelope.orgId, taskId: envelope.taskId, stepId: envelope.stepId, envelopeId: envelope.id, entryId: entry.id, refusal: label }, `inbox envelope refused; dead-lettered: ${reason}`);
    this.options.metrics?.inboxRefused.inc({ reason: label });
    this.options.metrics?.deadLetters.inc({ stream, reason: reason.slice(0, reason.indexOf(":")) });
    await this.options.bus.deadLetter(stream, COORDINATOR_GROUP, entry.id, entry.raw, reason);
  }
}

/**
 * The coordinator's intake of inbox entries: authenticate (bus MAC), decode, refuse what must never be applied,
 * move the entries of tenants switched off to their hold streams, and apply the rest through the engine in one
 * transaction (per task when that fails). What is refused is dead-lettered with its reason and counted, never
 * acknowledged as applied.
 */
import type { EnvelopeVerifier } from "../bus/auth/bus-auth.js";
import type { Bus, BusEntry } from "../bus/bus.js";
import { isSwitchyardError } from "../errors.js";
import type { TenantHold } from "../flags/tenant-hold.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Pool } from "../store/db.js";
import type { Engine } from "./engine.js";
import { envelopeToEvent } from "./envelopes.js";
import { findForeignTaskClaims } from "./inbox-claims.js";
import { applyIsolating, type DecodedEntry } from "./isolated-apply.js";
import type { OutboxRow } from "../store/engine/engine-store.js";
import type { CoordinatorStore } from "../store/coordinator/coordinator-store.js";
import { isInboxStream } from "../bus/shards.js";

export const COORDINATOR_GROUP = "coordinator";

/** A committed batch: the entries to acknowledge (ids by stream) and the outbox rows to publish. */
export interface AppliedBatch {
  acks: Map<string, string[]>;
  outbox: OutboxRow[];
}

/** Which tenants this coordinator applies, and where the others' envelopes belong (shard-ownership.ts, shards.ts). */
export interface InboxRouting {
  owns(orgId: string): boolean;
  inboxOf(orgId: string): string;
}

export interface InboxIntakeOptions {
  pool: Pool;
  /** Where the tenancy claims of envelopes to hold are checked (`taskOwners`). */
  store: Pick<CoordinatorStore, "taskOwners">;
  bus: Bus;
  engine: Engine;
  verifier: EnvelopeVerifier;
  logger: Logger;
  metrics?: Metrics;
  /** The coordinator's tenant hold (flags), once built. */
  hold: () => TenantHold<AppliedBatch> | undefined;
  tenantOn: (orgId: string) => boolean;
  routing: InboxRouting;
}

export class InboxIntake {
  constructor(private readonly options: InboxIntakeOptions) {}

  /**
   * Decodes and applies a batch in one transaction (per task when that fails, see isolated-apply.ts); undefined
   * when nothing is left to acknowledge or publish. Entries may come from several streams (each names its own).
   * Entries of tenants whose shard another coordinator owns are forwarded to their shard's inbox (from the shared
   * inbox of releases before shards, or a misrouted publish); entries of tenants switched off are moved to their
   * hold streams.
   */
  async apply(all: readonly BusEntry[]): Promise<AppliedBatch | undefined> {
    const { bus } = this.options;
    const acks = new Map<string, string[]>();
    // Authenticate and decode first: nothing unauthenticated is applied, forwarded, nor held for later.
    const accepted = new Map<BusEntry, DecodedEntry>();
    for (const entry of all) {
      const verdict = this.options.verifier.verify(entry.raw, entry.envelope);
      if (!verdict.ok) {
        await this.refuse(entry, verdict.reason, `UNAUTHENTICATED: ${verdict.message}`);
        continue;
      }
      try {
        const inbound = envelopeToEvent(entry.envelope, verdict.sender);
        const input = { ...inbound, dedupe: inbound.event.type !== "heartbeat", createdAtMs: Number(entry.envelope.createdAtMs) || undefined, traceparent: entry.envelope.trace?.traceparent };
        accepted.set(entry, { entryId: entryKey(entry), input, source: { stream: entry.stream, id: entry.id } });
      } catch (error) {
        if (!isSwitchyardError(error)) throw error;
        this.options.logger.warn({ err: error, envelopeId: entry.envelope.id, orgId: entry.envelope.orgId }, "inbound envelope refused; dead-lettered");
        this.options.metrics?.deadLetters.inc({ stream: entry.stream, reason: error.code });
        await bus.deadLetter(entry.stream, COORDINATOR_GROUP, entry.id, entry.raw, `${error.code}: ${error.message}`);
      }
    }
    let entries: readonly BusEntry[] = await this.forwardOthers([...accepted.keys()], acks);
    const hold = this.options.hold();
    const inboxEntries = entries.filter((entry) => isInboxStream(entry.stream));
    if (hold && inboxEntries.length > 0) {
      const kept = await hold.holdDisabled(await this.refuseUnknownHeld(inboxEntries));
      const keptSet = new Set(kept);
      entries = entries.filter((entry) => !isInboxStream(entry.stream) || keptSet.has(entry));
    }
    const decoded = entries.map((entry) => accepted.get(entry)!);
    if (decoded.length === 0) return acks.size > 0 ? { acks, outbox: [] } : undefined;
    this.options.metrics?.batchSize.observe(decoded.length);
    // Entries that were not applied are not acknowledged: redelivered (reclaim), dead-lettered after N tries.
    const applied = await applyIsolating({ engine: this.options.engine, pool: this.options.pool, logger: this.options.logger }, decoded);
    // Committed without them: refused entries (unknown task, another tenant's task, a sender that is not the step's
    // destination) changed nothing and go to the dead letters instead of being acknowledged.
    const byKey = new Map(entries.map((entry) => [entryKey(entry), entry]));
    for (const refused of applied.refused) await this.refuse(byKey.get(refused.entryId)!, refused.label, `REFUSED: ${refused.reason}`);
    for (const input of applied.inputs) this.options.metrics?.events.inc({ type: input.event.type, outcome: "seen" });
    for (const key of applied.ackIds) addAck(acks, byKey.get(key)!);
    return { acks, outbox: applied.outbox };
  }

  /**
   * Entries of tenants this coordinator does not own: appended to their shard's inbox and acknowledged here. That
   * includes entries read from the shard's own inbox just before the shard moved away (a blocking read still in
   * flight during the hand-over): appended again, the new owner reads them at once instead of reclaiming them
   * from this consumer after the idle time; should it have claimed the original too, the copy is a duplicate and
   * dropped by envelope id.
   */
  private async forwardOthers(entries: readonly BusEntry[], acks: Map<string, string[]>): Promise<BusEntry[]> {
    const { routing, bus } = this.options;
    const mine: BusEntry[] = [];
    const forward: Array<{ entry: BusEntry; stream: string }> = [];
    for (const entry of entries) {
      const orgId = entry.envelope.orgId;
      if (routing.owns(orgId)) mine.push(entry);
      else forward.push({ entry, stream: routing.inboxOf(orgId) });
    }
    if (forward.length > 0) {
      await bus.publishEncoded(forward.map((f) => ({ stream: f.stream, data: f.entry.raw })));
      for (const f of forward) addAck(acks, f.entry);
      this.options.metrics?.inboxForwarded.inc(forward.length);
    }
    return mine;
  }

  /**
   * Entries of tenants switched off would be held; those naming a task that does not exist, or that belongs to
   * another tenant (a tenant that does not exist has no tasks), are refused now instead of held for nobody.
   */
  private async refuseUnknownHeld(entries: readonly BusEntry[]): Promise<BusEntry[]> {
    const off = entries.filter((entry) => !this.options.tenantOn(entry.envelope.orgId));
    if (off.length === 0) return [...entries];
    const claims = await findForeignTaskClaims(this.options.store.taskOwners, this.options.pool, off.map((entry) => entry.envelope));
    const refused = new Set<string>();
    for (const entry of off) {
      const claim = claims.get(entry.envelope.id);
      if (!claim) continue;
      refused.add(entry.id);
      await this.refuse(entry, claim.label, `REFUSED: ${claim.reason}`);
    }
    return entries.filter((entry) => !refused.has(entry.id));
  }

  /** Dead-letters an inbox entry that must not be applied, with the reason; counted by reason. */
  private async refuse(entry: BusEntry, label: string, reason: string): Promise<void> {
    const stream = entry.stream;
    const { envelope } = entry;
    this.options.logger.warn({ orgId: envelope.orgId, taskId: envelope.taskId, stepId: envelope.stepId, envelopeId: envelope.id, entryId: entry.id, refusal: label }, `inbox envelope refused; dead-lettered: ${reason}`);
    this.options.metrics?.inboxRefused.inc({ reason: label });
    this.options.metrics?.deadLetters.inc({ stream, reason: reason.slice(0, reason.indexOf(":")) });
    await this.options.bus.deadLetter(stream, COORDINATOR_GROUP, entry.id, entry.raw, reason);
  }
}

/** An entry's identity across streams (entry ids are only unique within a stream). */
function entryKey(entry: BusEntry): string {
  return `${entry.stream}\n${entry.id}`;
}

function addAck(acks: Map<string, string[]>, entry: BusEntry): void {
  const ids = acks.get(entry.stream);
  if (ids) ids.push(entry.id);
  else acks.set(entry.stream, [entry.id]);
}

/**
 * COORDINATOR_ENABLED per tenant, on the coordinator's side: inbox messages of a tenant switched off are moved to
 * its hold stream (never dropped, never applied), and once the tenant is switched on again they are applied
 * like inbox entries, oldest first. The coordinator also asks for a tenant's release before firing its due
 * steps, so a held result is applied before its step could time out.
 *
 * Which tenants may have held messages: those this process held, those with tasks in flight when it started
 * (held by an earlier process) or when it took over their shard (held by the shard's previous owner), and any
 * tenant whose steps come due.
 */
import type { Bus, BusEntry } from "../bus/bus.js";
import type { Logger } from "../logger.js";
import type { Queryable } from "../store/db.js";
import type { FlagStore } from "../store/flags/flag-store.js";
import type { CoordinatorFlags } from "./flag-types.js";
import { HeldInbox, heldStreamName } from "./held-inbox.js";

export interface TenantHoldOptions<Applied> {
  bus: Bus;
  /** The coordinator's group and consumer. */
  group: string;
  consumer: string;
  reclaimIdleMs: number;
  batchSize: number;
  flags: CoordinatorFlags;
  /** Where the tenants with tasks in flight are found (`runtime.stores.flags`). */
  store: Pick<FlagStore, "tenantsInFlight">;
  logger: Logger;
  /** Applies entries read from `stream` in one transaction (the coordinator's batch path). */
  apply(entries: readonly BusEntry[]): Promise<(Applied & { acks: ReadonlyMap<string, readonly string[]> }) | undefined>;
  /** Publishes what an applied batch produced. */
  publish(applied: Applied): Promise<void>;
  /** False once the coordinator is stopping. */
  running(): boolean;
  /** Whether this coordinator applies the tenant's messages now (it owns the tenant's shard). @defaultValue always */
  serves?(orgId: string): boolean;
}

export class TenantHold<Applied> {
  private readonly held: HeldInbox;
  private readonly candidates = new Set<string>();

  constructor(private readonly options: TenantHoldOptions<Applied>) {
    this.held = new HeldInbox({ bus: options.bus, group: options.group, consumer: options.consumer, reclaimIdleMs: options.reclaimIdleMs });
  }

  /**
   * Moves the entries of tenants switched off to their hold streams and acknowledges them on the inbox; returns
   * the rest. A failure leaves the whole batch unacknowledged, to be redelivered: nothing is lost either way.
   */
  async holdDisabled(entries: readonly BusEntry[]): Promise<readonly BusEntry[]> {
    const { flags, bus } = this.options;
    const held = entries.filter((entry) => !flags.coordinatorEnabled(entry.envelope.orgId));
    if (held.length === 0) return entries;
    await this.held.hold(held);
    // Entries may come from several inboxes (shards, and the shared one): each is acknowledged where it was read.
    const byStream = new Map<string, string[]>();
    for (const entry of held) byStream.set(entry.stream, [...(byStream.get(entry.stream) ?? []), entry.id]);
    await Promise.all([...byStream].map(([stream, ids]) => bus.ack(stream, this.options.group, ids)));
    const tenants = [...new Set(held.map((entry) => entry.envelope.orgId))];
    for (const orgId of tenants) this.candidates.add(orgId);
    this.options.logger.info({ tenants, count: held.length }, "COORDINATOR_ENABLED is off for these tenants: their messages are held until it is on");
    return entries.filter((entry) => !held.includes(entry));
  }

  /**
   * Adds the tenants with tasks in flight (of `shards` only, when given): an earlier process, or the coordinator
   * that owned their shard before, may have held their messages.
   */
  async discover(db: Queryable, shards?: { count: number; owned: readonly number[] }): Promise<void> {
    try {
      for (const orgId of await this.options.store.tenantsInFlight(db, shards)) this.candidates.add(orgId);
    } catch (error) {
      this.options.logger.warn({ err: error }, "could not list active tenants; their held messages are applied when their steps come due");
    }
  }

  /** Applies the held messages of every candidate tenant that is switched on. */
  async releaseEnabled(): Promise<void> {
    for (const orgId of [...this.candidates]) {
      if (!this.live()) return;
      if (this.options.flags.coordinatorEnabled(orgId) && this.serves(orgId)) await this.release(orgId);
    }
  }

  /** Applies one tenant's held messages (if it is switched on); duplicates are dropped by envelope id. */
  async release(orgId: string): Promise<void> {
    // Another coordinator owns the tenant's shard now: its holds are that coordinator's to release.
    if (!this.serves(orgId)) return;
    if (!(await this.held.hasHeld(orgId))) {
      this.candidates.delete(orgId);
      return;
    }
    let released = 0;
    for (;;) {
      if (!this.live() || !this.options.flags.coordinatorEnabled(orgId)) return;
      const entries = await this.held.take(orgId, this.options.batchSize);
      if (entries.length === 0) break;
      const applied = await this.options.apply(entries);
      await this.held.release(orgId, applied?.acks.get(heldStreamName(orgId)) ?? []);
      if (applied) await this.options.publish(applied);
      released += entries.length;
    }
    await this.held.release(orgId, []);
    if (!(await this.held.hasHeld(orgId))) this.candidates.delete(orgId);
    if (released > 0) this.options.logger.info({ orgId, count: released }, "COORDINATOR_ENABLED is on again: held messages applied");
  }

  private serves(orgId: string): boolean {
    return this.options.serves?.(orgId) ?? true;
  }

  private live(): boolean {
    return this.options.running() && this.options.flags.busEnabled();
  }
}

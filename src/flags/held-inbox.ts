/**
 * Where a coordinator parks the inbox messages of a tenant whose COORDINATOR_ENABLED is off: one hold stream
 * per tenant (`held:<tenant>`), read with the coordinator's consumer group. Entries are moved there (published,
 * then acknowledged on the inbox) so the shared inbox keeps flowing for every other tenant, and nothing of the
 * disabled tenant is dropped. When the tenant is enabled again the coordinator takes the held entries back
 * (`take`), applies them like inbox entries and acknowledges them here (`release`).
 *
 * A crash between the publish and the inbox acknowledgement leaves the entry in both places; the engine drops
 * the second application by envelope id, as it does for any redelivery.
 */
import { createHash } from "node:crypto";
import type { Bus, BusEntry } from "../bus/bus.js";

const PLAIN_TENANT_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/**
 * The hold stream of a tenant. Tenant ids that are not valid stream-name parts get a stable digest name, so
 * every coordinator maps a tenant to the same stream.
 */
export function heldStreamName(orgId: string): string {
  if (PLAIN_TENANT_RE.test(orgId)) return `held:${orgId}`;
  return `heldx:${createHash("sha256").update(orgId).digest("hex").slice(0, 40)}`;
}

export interface HeldInboxOptions {
  bus: Bus;
  /** The consumer group held entries are read with (the coordinator's). */
  group: string;
  consumer: string;
  /** Held entries a crashed coordinator took but never released are taken over after this long. */
  reclaimIdleMs: number;
}

export class HeldInbox {
  constructor(private readonly options: HeldInboxOptions) {}

  /** Copies entries to their tenants' hold streams. The caller acknowledges them on the inbox afterwards. */
  async hold(entries: readonly BusEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const streams = new Set(entries.map((entry) => heldStreamName(entry.envelope.orgId)));
    // The group must exist before the first entry lands: trimming keeps only what a group still needs, and a
    // stream without a group would be trimmed to nothing.
    // Not cached: a Redis that lost the group (flushed) must get it back before anything lands again.
    for (const stream of streams) await this.options.bus.ensureGroup(stream, this.options.group);
    // The bytes as read, not re-encoded: the publisher's MAC covers exactly those bytes.
    await this.options.bus.publishEncoded(entries.map((entry) => ({ stream: heldStreamName(entry.envelope.orgId), data: entry.raw })));
  }

  /** Whether anything of the tenant is still held (not yet released). */
  async hasHeld(orgId: string): Promise<boolean> {
    const stats = await this.options.bus.stats(heldStreamName(orgId), this.options.group);
    return stats.length > 0;
  }

  /** Takes up to `count` held entries of a tenant: stalled ones first, then new ones. Empty when none are left. */
  async take(orgId: string, count: number): Promise<BusEntry[]> {
    const stream = heldStreamName(orgId);
    const { bus, group, consumer, reclaimIdleMs } = this.options;
    const stalled = await bus.reclaim({ stream, group, consumer, minIdleMs: reclaimIdleMs, count });
    if (stalled.length > 0) return stalled;
    return bus.read({ stream, group, consumer, count, blockMs: 0 });
  }

  /** Acknowledges applied entries and removes what no group needs any more. */
  async release(orgId: string, ids: readonly string[]): Promise<void> {
    const stream = heldStreamName(orgId);
    if (ids.length > 0) await this.options.bus.ack(stream, this.options.group, ids);
    await this.options.bus.trim(stream, 0);
  }
}

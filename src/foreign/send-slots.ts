/**
 * The sender's pool of in-flight foreign calls, per coordinator process: `capacity` slots in all, and per tenant a
 * share — `capacity × percent / 100 × weight` (the tenant's dispatch weight, `limits set --weight`), at least one,
 * at most `capacity`. A tenant whose agent hangs or drips progress fills its own share and no more, so every other
 * tenant's hops keep their slots: a slow agent slows only its own tenant.
 *
 * Each call holds an AbortController: the sender aborts it when its step attempt is no longer in flight, when its
 * hard ceiling passes, or when the process stops. The share is per process (every coordinator has its own pool),
 * so a tenant may hold its share on each coordinator; with N coordinators that is N shares of the deployment's N
 * pools, the same fraction.
 */
import { DEFAULT_WEIGHT, type LimitTable } from "../core/limits.js";

export interface SendSlotsOptions {
  capacity: number;
  /** Percent of `capacity` one tenant may hold at weight 1. */
  tenantPercent: number;
  /** The dispatch limits in force (weights); none: every tenant weighs 1. */
  limits?: () => LimitTable;
}

export interface InFlightCall {
  bridgeId: string;
  orgId: string;
  controller: AbortController;
}

/** What a claim may take: how many in all, and per tenant (absent tenants: `defaultRoom`; `full` ones: none). */
export interface ClaimRooms {
  free: number;
  defaultRoom: number;
  /** Tenants with a room other than `defaultRoom` (in flight already, or weighted), with that room (> 0). */
  orgs: string[];
  rooms: number[];
  /** Tenants with no room left: a claim must not even look at their bridges. */
  full: string[];
}

export class SendSlots {
  private readonly calls = new Map<string, InFlightCall>();
  private readonly perTenant = new Map<string, number>();

  constructor(private readonly options: SendSlotsOptions) {}

  get size(): number {
    return this.calls.size;
  }

  get capacity(): number {
    return this.options.capacity;
  }

  /** How many calls one tenant may have in flight here. */
  shareOf(orgId: string): number {
    const weight = this.options.limits?.().weight(orgId) ?? DEFAULT_WEIGHT;
    return Math.min(this.options.capacity, Math.max(1, Math.floor((this.options.capacity * this.options.tenantPercent * weight) / 100)));
  }

  /** The rooms for the next claim; `free` is 0 when the pool is full. */
  rooms(): ClaimRooms {
    const free = Math.max(0, this.options.capacity - this.calls.size);
    const defaultRoom = this.shareOf("");
    const orgs: string[] = [];
    const rooms: number[] = [];
    const full: string[] = [];
    const tenants = new Set(this.perTenant.keys());
    for (const row of this.options.limits?.().rows ?? []) if (row.orgId !== "" && row.weight !== null) tenants.add(row.orgId);
    for (const orgId of tenants) {
      const room = this.shareOf(orgId) - (this.perTenant.get(orgId) ?? 0);
      if (room <= 0) full.push(orgId);
      else if (room !== defaultRoom) {
        orgs.push(orgId);
        rooms.push(room);
      }
    }
    return { free, defaultRoom, orgs, rooms, full };
  }

  add(bridgeId: string, orgId: string): InFlightCall {
    const call = { bridgeId, orgId, controller: new AbortController() };
    this.calls.set(bridgeId, call);
    this.perTenant.set(orgId, (this.perTenant.get(orgId) ?? 0) + 1);
    return call;
  }

  remove(call: InFlightCall): void {
    if (this.calls.get(call.bridgeId) !== call) return;
    this.calls.delete(call.bridgeId);
    const left = (this.perTenant.get(call.orgId) ?? 1) - 1;
    if (left <= 0) this.perTenant.delete(call.orgId);
    else this.perTenant.set(call.orgId, left);
  }

  get(bridgeId: string): InFlightCall | undefined {
    return this.calls.get(bridgeId);
  }

  bridgeIds(): string[] {
    return [...this.calls.keys()];
  }

  /** Aborts every call (the process stops). */
  abortAll(reason: unknown): void {
    for (const call of this.calls.values()) call.controller.abort(reason);
  }
}

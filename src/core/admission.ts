/**
 * The admission gate (issue 15): whether a ready step may be dispatched now or is held back in Postgres. Pure —
 * the shell loads the load figures in the batch's transaction (store/engine/postgres-admission-store.ts) and the
 * gate counts what the batch itself admits, so two decisions of one batch never both take the last slot.
 *
 * Fairness lives in the releaser (releaser.ts), not here: while any step is held on a contended destination, a
 * new ready step queues behind it (rule "queued behind held steps") and only a release decides who goes next.
 */
import { pairKey, type LimitTable } from "./limits.js";
import type { ConcurrencyGroup } from "./concurrency-key.js";

/**
 * Held steps are counted up to this many per destination and per (tenant, destination)
 * (store/engine/postgres-admission-store.ts): admission only needs to know whether steps are held, and counting a backlog of thousands in every batch's
 * transaction was most of what holding cost. A count at the cap reads "100+" in a reason.
 */
export const HELD_COUNT_CAP = 100;
const shown = (n: number): string => (n >= HELD_COUNT_CAP ? `${HELD_COUNT_CAP}+` : String(n));

export interface DestinationLoad {
  /** Steps `dispatched` to the destination, over every tenant. */
  inFlight: number;
  /** Steps held for the destination, over every tenant. */
  held: number;
}

export interface TenantLoad {
  /** The tenant's dispatched steps over all destinations (only loaded when it has an overall cap). */
  inFlight: number;
  byDestination: Map<string, number>;
  /** Held steps without a concurrency key (a keyed step queues behind those of its own key only). */
  heldByDestination: Map<string, number>;
  /** Held steps with a concurrency key, whether their key lets them go or not. */
  keyedHeldByDestination?: Map<string, number>;
}

/** A concurrency key's load: its steps in flight and held (src/core/concurrency-key.ts). */
export interface KeyLoad {
  inFlight: number;
  held: number;
}

export interface Bucket {
  tokens: number;
  atMs: number;
}

export interface AdmissionFacts {
  limits: LimitTable;
  destinations: Map<string, DestinationLoad>;
  tenants: Map<string, TenantLoad>;
  /** Keyed by `pairKey(orgId, destination)`. */
  buckets: Map<string, Bucket>;
  /** Keyed by `pairKey(orgId, key)`: the concurrency keys of the batch's steps. */
  keys?: Map<string, KeyLoad>;
}

export type Admission = { admit: true } | { admit: false; reason: string };

/** What the decision code asks: the only part of the gate it sees. */
export interface AdmissionCheck {
  /**
   * Admits (and counts) a dispatch of `orgId` to `destination`, or says why it is held. `released`: the releaser
   * chose this step, so it does not queue behind held steps again (their order was the releaser's to keep).
   * `ahead`: work already running asked for it (a delegated sub-query): it does not queue behind new work either —
   * its parent's step timeout is running — but capacity, caps and rates still hold it. `group`: the step's
   * concurrency key, if it has one for this task's input.
   */
  admit(orgId: string, destination: string, released: boolean, ahead?: boolean, group?: ConcurrencyGroup): Admission;
}

const ADMIT: Admission = { admit: true };

export class AdmissionGate implements AdmissionCheck {
  /** Buckets this batch took tokens from, to write back. */
  private readonly touched = new Set<string>();
  /** Destinations where a step was queued behind held ones while the destination itself had room. */
  private readonly queuedWithRoom = new Set<string>();

  constructor(
    private readonly facts: AdmissionFacts,
    private readonly now: number,
  ) {}

  admit(orgId: string, destination: string, released: boolean, ahead = false, group?: ConcurrencyGroup): Admission {
    const { limits } = this.facts;
    const governed = limits.governs(orgId, destination);
    if (!governed && !group) return ADMIT;
    const key = group ? this.key(orgId, group.key) : undefined;
    if (group && key) {
      // A key keeps its own order: behind its earlier held steps, whatever else lets a step go.
      if (!released && key.held > 0) return this.heldKeyed(orgId, destination, key, `queued behind ${shown(key.held)} earlier held step(s) of concurrency key ${group.key}`);
      if (key.inFlight >= group.limit) return this.heldKeyed(orgId, destination, key, `queued behind concurrency key ${group.key} (${key.inFlight}/${group.limit} in flight)`);
    }
    if (!governed) {
      key!.inFlight += 1;
      return ADMIT;
    }
    const tenant = this.tenant(orgId);
    const dest = this.destination(destination);
    const verdict = this.check(orgId, destination, released || ahead, tenant, dest);
    if (!verdict.admit && !released) {
      // A step held by this batch is queued like one held before it: the batch's later steps line up behind it.
      if (key) return this.heldKeyed(orgId, destination, key, verdict.reason);
      tenant.heldByDestination.set(destination, (tenant.heldByDestination.get(destination) ?? 0) + 1);
      dest.held += 1;
    }
    if (verdict.admit && key) key.inFlight += 1;
    return verdict;
  }

  /** A keyed step held: its key's later steps queue behind it (other keys and unkeyed steps do not). */
  private heldKeyed(orgId: string, destination: string, key: KeyLoad, reason: string): Admission {
    key.held += 1;
    const tenant = this.tenant(orgId);
    const keyed = (tenant.keyedHeldByDestination ??= new Map());
    keyed.set(destination, (keyed.get(destination) ?? 0) + 1);
    return hold(reason);
  }

  private key(orgId: string, key: string): KeyLoad {
    const keys = (this.facts.keys ??= new Map());
    const id = pairKey(orgId, key);
    let load = keys.get(id);
    if (!load) keys.set(id, (load = { inFlight: 0, held: 0 }));
    return load;
  }

  private check(orgId: string, destination: string, released: boolean, tenant: TenantLoad, dest: DestinationLoad): Admission {
    const { limits } = this.facts;
    const ownHeld = tenant.heldByDestination.get(destination) ?? 0;
    const capacity = limits.capacity(destination);
    const room = capacity === undefined || dest.inFlight < capacity;
    if (!released && ownHeld > 0) return this.queued(destination, room, `queued behind ${shown(ownHeld)} earlier held step(s) of this tenant on ${destination}`);
    if (!room) return hold(`queued: ${destination} at capacity (${dest.inFlight}/${capacity} in flight)`);
    if (capacity !== undefined && !released && dest.held > 0) return this.queued(destination, room, `queued behind ${shown(dest.held)} held step(s) on ${destination} (fair share)`);
    const pairMax = limits.maxInFlight(orgId, destination);
    const onDestination = tenant.byDestination.get(destination) ?? 0;
    if (pairMax !== undefined && onDestination >= pairMax) return hold(`queued behind tenant limit (${onDestination}/${pairMax} in flight on ${destination})`);
    const tenantMax = limits.tenantMaxInFlight(orgId);
    if (tenantMax !== undefined && tenant.inFlight >= tenantMax) return hold(`queued behind tenant limit (${tenant.inFlight}/${tenantMax} in flight over all destinations)`);
    const rate = limits.rate(orgId, destination);
    if (rate) {
      const key = pairKey(orgId, destination);
      const bucket = refill(this.facts.buckets.get(key), rate, this.now);
      if (bucket.tokens < 1) {
        this.facts.buckets.set(key, bucket);
        return hold(`queued behind tenant rate limit (${rate.ratePerSec}/s on ${destination})`);
      }
      this.facts.buckets.set(key, { tokens: bucket.tokens - 1, atMs: this.now });
      this.touched.add(key);
    }
    dest.inFlight += 1;
    tenant.inFlight += 1;
    tenant.byDestination.set(destination, onDestination + 1);
    return ADMIT;
  }

  private queued(destination: string, room: boolean, reason: string): Admission {
    if (room) this.queuedWithRoom.add(destination);
    return hold(reason);
  }

  /**
   * Destinations where this batch may leave a slot unused: a step was queued behind held ones although the
   * destination had room (the held ones may be able to go now).
   */
  roomBehindHeld(): ReadonlySet<string> {
    return this.queuedWithRoom;
  }

  /** The destinations where these tenants have steps held with a concurrency key. */
  keyedHeldDestinations(orgIds: Iterable<string>): string[] {
    const out: string[] = [];
    for (const orgId of orgIds) for (const [d, n] of this.facts.tenants.get(orgId)?.keyedHeldByDestination ?? []) if (n > 0) out.push(d);
    return out;
  }

  /** Whether steps are held for `destination` (of any tenant on a destination with a capacity, else of the batch's tenants). */
  hasHeld(destination: string): boolean {
    if ((this.facts.destinations.get(destination)?.held ?? 0) > 0) return true;
    for (const tenant of this.facts.tenants.values()) {
      if ((tenant.heldByDestination.get(destination) ?? 0) > 0 || (tenant.keyedHeldByDestination?.get(destination) ?? 0) > 0) return true;
    }
    return false;
  }

  /** The buckets this batch drew from, as they are now (to persist with the batch). */
  changedBuckets(): Array<{ orgId: string; destination: string } & Bucket> {
    return [...this.touched].map((key) => {
      const [orgId, destination] = key.split("\u0000") as [string, string];
      return { orgId, destination, ...this.facts.buckets.get(key)! };
    });
  }

  private tenant(orgId: string): TenantLoad {
    let load = this.facts.tenants.get(orgId);
    if (!load) this.facts.tenants.set(orgId, (load = { inFlight: 0, byDestination: new Map(), heldByDestination: new Map() }));
    return load;
  }

  private destination(destination: string): DestinationLoad {
    let load = this.facts.destinations.get(destination);
    if (!load) this.facts.destinations.set(destination, (load = { inFlight: 0, held: 0 }));
    return load;
  }
}

function hold(reason: string): Admission {
  return { admit: false, reason };
}

/** A bucket topped up to `now`; a tenant's first dispatch finds it full. */
export function refill(bucket: Bucket | undefined, rate: { ratePerSec: number; burst: number }, now: number): Bucket {
  if (!bucket) return { tokens: rate.burst, atMs: now };
  const elapsed = Math.max(0, now - bucket.atMs);
  return { tokens: Math.min(rate.burst, bucket.tokens + (elapsed * rate.ratePerSec) / 1000), atMs: now };
}

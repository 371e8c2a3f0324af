/**
 * The admission gate (issue 15): whether a ready step may be dispatched now or is held back in Postgres. Pure —
 * the shell loads the load figures in the batch's transaction (admission-load.ts) and the gate counts what the
 * batch itself admits, so two decisions of one batch never both take the last slot.
 *
 * Fairness lives in the releaser (releaser.ts), not here: while any step is held on a contended destination, a
 * new ready step queues behind it (rule "queued behind held steps") and only a release decides who goes next.
 */
import { pairKey, type LimitTable } from "./limits.js";

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
  heldByDestination: Map<string, number>;
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
}

export type Admission = { admit: true } | { admit: false; reason: string };

/** What the decision code asks: the only part of the gate it sees. */
export interface AdmissionCheck {
  /**
   * Admits (and counts) a dispatch of `orgId` to `destination`, or says why it is held. `released`: the releaser
   * chose this step, so it does not queue behind held steps again (their order was the releaser's to keep).
   * `ahead`: work already running asked for it (a delegated sub-query): it does not queue behind new work either —
   * its parent's step timeout is running — but capacity, caps and rates still hold it.
   */
  admit(orgId: string, destination: string, released: boolean, ahead?: boolean): Admission;
}

const ADMIT: Admission = { admit: true };

export class AdmissionGate implements AdmissionCheck {
  /** Buckets this batch took tokens from, to write back. */
  private readonly touched = new Set<string>();

  constructor(
    private readonly facts: AdmissionFacts,
    private readonly now: number,
  ) {}

  admit(orgId: string, destination: string, released: boolean, ahead = false): Admission {
    const { limits } = this.facts;
    if (!limits.governs(orgId, destination)) return ADMIT;
    const tenant = this.tenant(orgId);
    const dest = this.destination(destination);
    const verdict = this.check(orgId, destination, released || ahead, tenant, dest);
    if (!verdict.admit && !released) {
      // A step held by this batch is queued like one held before it: the batch's later steps line up behind it.
      tenant.heldByDestination.set(destination, (tenant.heldByDestination.get(destination) ?? 0) + 1);
      dest.held += 1;
    }
    return verdict;
  }

  private check(orgId: string, destination: string, released: boolean, tenant: TenantLoad, dest: DestinationLoad): Admission {
    const { limits } = this.facts;
    const ownHeld = tenant.heldByDestination.get(destination) ?? 0;
    if (!released && ownHeld > 0) return hold(`queued behind ${ownHeld} earlier held step(s) of this tenant on ${destination}`);
    const capacity = limits.capacity(destination);
    if (capacity !== undefined && dest.inFlight >= capacity) return hold(`queued: ${destination} at capacity (${dest.inFlight}/${capacity} in flight)`);
    if (capacity !== undefined && !released && dest.held > 0) return hold(`queued behind ${dest.held} held step(s) on ${destination} (fair share)`);
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

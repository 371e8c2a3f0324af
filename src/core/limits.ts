/**
 * Dispatch limits (issue 15), as an operator sets them (table `dispatch_limits`, src/fairness/limit-changes.ts):
 *
 * - a destination's **capacity**: how many steps may be in flight on it at once, over every tenant (`org_id = ''`);
 * - a tenant's **weight** (its share of a contended destination, default 1) and **max in flight** over all
 *   destinations (`destination = ''`);
 * - a tenant's **max in flight** and **rate** (token bucket: `ratePerSec`, `burst`) on one destination.
 *
 * A destination with none of these is unlimited and dispatch to it works exactly as before (no extra query).
 */
import { parseDestination } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";

export interface DispatchLimit {
  /** "" for a destination-wide row. */
  orgId: string;
  /** "" for a tenant-wide row. */
  destination: string;
  maxInFlight: number | null;
  ratePerSec: number | null;
  burst: number | null;
  weight: number | null;
}

export interface DispatchLimitRow extends DispatchLimit {
  updatedBy: string;
  reason: string;
  updatedAt: string;
}

export const DEFAULT_WEIGHT = 1;
export const MAX_WEIGHT = 1000;

const ORG_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

function invalid(path: string, message: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.InvalidArgument, message, { details: { path } });
}

function positiveInt(value: number | null, path: string, max = 1_000_000): number | null {
  if (value === null) return null;
  if (!Number.isInteger(value) || value < 1 || value > max) throw invalid(path, `${path} must be a whole number from 1 to ${max}, got ${value}`);
  return value;
}

/** Checks a limit as given by the CLI or API; throws INVALID_ARGUMENT naming the field. */
export function validateLimit(limit: DispatchLimit): DispatchLimit {
  const { orgId, destination } = limit;
  if (orgId === "" && destination === "") throw invalid("tenant", "a limit names a tenant, a destination, or both");
  if (orgId !== "" && !ORG_RE.test(orgId)) throw invalid("tenant", `tenant must be letters, digits, "_", ".", "-", got ${JSON.stringify(orgId)}`);
  if (destination !== "" && !parseDestination(destination)) throw invalid("destination", `destination must be role:NAME, team:NAME or foreign:KEY, got ${JSON.stringify(destination)}`);
  const maxInFlight = positiveInt(limit.maxInFlight, "maxInFlight");
  const weight = positiveInt(limit.weight, "weight", MAX_WEIGHT);
  const burst = positiveInt(limit.burst, "burst");
  const rate = limit.ratePerSec;
  if (rate !== null && !(Number.isFinite(rate) && rate > 0 && rate <= 100_000)) throw invalid("ratePerSec", `ratePerSec must be above 0 and at most 100000, got ${rate}`);
  if (orgId === "") {
    if (rate !== null || burst !== null || weight !== null) throw invalid("tenant", "a destination-wide limit is a capacity (maxInFlight) only; rates and weights are per tenant");
    if (maxInFlight === null) throw invalid("maxInFlight", "a destination-wide limit needs maxInFlight (the destination's capacity)");
  }
  if (destination === "" && (rate !== null || burst !== null)) throw invalid("destination", "a rate is per (tenant, destination): name the destination");
  if (destination !== "" && orgId !== "" && weight !== null) throw invalid("weight", "a weight is per tenant: set it without a destination");
  if (burst !== null && rate === null) throw invalid("burst", "burst needs ratePerSec");
  if (maxInFlight === null && rate === null && weight === null) throw invalid("maxInFlight", "nothing to set: give maxInFlight, ratePerSec or weight");
  return { orgId, destination, maxInFlight, ratePerSec: rate, burst, weight };
}

/** A rate limit as a token bucket: `ratePerSec` tokens a second, at most `burst` saved (default: one second's worth). */
export interface RateLimit {
  ratePerSec: number;
  burst: number;
}

/** The limits in force, indexed for the admission gate and the releaser. Immutable. */
export class LimitTable {
  private readonly capacities = new Map<string, number>();
  private readonly tenants = new Map<string, DispatchLimit>();
  private readonly pairs = new Map<string, DispatchLimit>();
  /** Tenants with any limit of their own (weights alone do not limit: they only share a capacity). */
  private readonly limitedTenants = new Set<string>();

  constructor(readonly rows: readonly DispatchLimit[] = []) {
    for (const row of rows) {
      if (row.orgId === "") {
        if (row.maxInFlight !== null) this.capacities.set(row.destination, row.maxInFlight);
      } else if (row.destination === "") {
        this.tenants.set(row.orgId, row);
        if (row.maxInFlight !== null) this.limitedTenants.add(row.orgId);
      } else {
        this.pairs.set(pairKey(row.orgId, row.destination), row);
        this.limitedTenants.add(row.orgId);
      }
    }
  }

  get empty(): boolean {
    return this.capacities.size === 0 && this.limitedTenants.size === 0;
  }

  capacity(destination: string): number | undefined {
    return this.capacities.get(destination);
  }

  /** Destinations with a capacity. */
  destinations(): string[] {
    return [...this.capacities.keys()];
  }

  weight(orgId: string): number {
    return this.tenants.get(orgId)?.weight ?? DEFAULT_WEIGHT;
  }

  tenantMaxInFlight(orgId: string): number | undefined {
    return this.tenants.get(orgId)?.maxInFlight ?? undefined;
  }

  maxInFlight(orgId: string, destination: string): number | undefined {
    return this.pairs.get(pairKey(orgId, destination))?.maxInFlight ?? undefined;
  }

  rate(orgId: string, destination: string): RateLimit | undefined {
    const row = this.pairs.get(pairKey(orgId, destination));
    if (!row || row.ratePerSec === null) return undefined;
    return { ratePerSec: row.ratePerSec, burst: row.burst ?? Math.max(1, Math.ceil(row.ratePerSec)) };
  }

  /** Whether the tenant has limits of its own (taken under its admission lock: src/store/engine/postgres-admission-store.ts). */
  tenantLimited(orgId: string): boolean {
    return this.limitedTenants.has(orgId);
  }

  /** Whether a dispatch of `orgId` to `destination` is subject to admission at all. */
  governs(orgId: string, destination: string): boolean {
    return this.capacities.has(destination) || this.limitedTenants.has(orgId);
  }
}

export function pairKey(orgId: string, destination: string): string {
  return `${orgId}\u0000${destination}`;
}

/** Where the engine reads the limits in force (the live table, or a fixed one in tests). */
export interface LimitSource {
  limits(): LimitTable;
}

export const NO_LIMITS: LimitSource = { limits: () => EMPTY_TABLE };
const EMPTY_TABLE = new LimitTable();

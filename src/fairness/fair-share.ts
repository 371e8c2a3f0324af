/**
 * Who goes next on a contended destination (pure). Every coordinator computes the same weighted max-min fair
 * shares of a destination's capacity from the same Postgres figures (every tenant's in-flight and held steps,
 * whichever shard it is in), and releases only its own tenants' held steps, each up to its share. So no shard
 * owner takes the slots another shard's tenant is due, without any coordination between them: a tenant below its
 * share gets the next freed slot, whatever another tenant's backlog. Unused share flows to tenants that can use it
 * (work conserving). Within the free slots, the least-served tenant (in-flight ÷ weight) goes first, one step at a
 * time: a deficit round robin whose quantum is the weight.
 */

export interface TenantDemand {
  orgId: string;
  weight: number;
  inFlight: number;
  held: number;
  /** Whether this coordinator releases its steps (its shard is owned here and its coordinator flag is on). */
  ours: boolean;
  /** The most more of its steps its own limits let go now (max in flight, overall cap); undefined: no limit. */
  headroom?: number;
}

/**
 * Weighted max-min fair shares of `capacity` over the tenants' demands (in-flight + held): water-filling, so a
 * tenant that wants less than its weighted share keeps only what it wants and the rest is shared by the others.
 */
export function fairShares(capacity: number, tenants: readonly TenantDemand[]): Map<string, number> {
  const shares = new Map<string, number>();
  let left = capacity;
  let open = tenants.filter((t) => t.inFlight + t.held > 0);
  while (open.length > 0 && left > 1e-9) {
    const weights = open.reduce((sum, t) => sum + t.weight, 0);
    const perWeight = left / weights;
    const satisfied = open.filter((t) => t.inFlight + t.held - (shares.get(t.orgId) ?? 0) <= perWeight * t.weight);
    if (satisfied.length === 0) {
      for (const t of open) shares.set(t.orgId, (shares.get(t.orgId) ?? 0) + perWeight * t.weight);
      break;
    }
    for (const t of satisfied) {
      const want = t.inFlight + t.held - (shares.get(t.orgId) ?? 0);
      shares.set(t.orgId, (shares.get(t.orgId) ?? 0) + want);
      left -= want;
    }
    open = open.filter((t) => !satisfied.includes(t));
  }
  for (const t of tenants) if (!shares.has(t.orgId)) shares.set(t.orgId, 0);
  return shares;
}

/**
 * The release order for one destination: org ids, one entry per step to release, interleaved across tenants so the
 * stream sees them fairly too. `capacity` undefined: no destination capacity, only the tenants' own limits.
 */
export function planReleases(capacity: number | undefined, tenants: readonly TenantDemand[]): string[] {
  const ours = tenants.filter((t) => t.ours && t.held > 0);
  if (ours.length === 0) return [];
  const totalInFlight = tenants.reduce((sum, t) => sum + t.inFlight, 0);
  let free = capacity === undefined ? Number.POSITIVE_INFINITY : capacity - totalInFlight;
  // A share is a fraction; a tenant may start a step while it is below it (ceil), so shares of 2.5 and 2.5 let
  // both tenants run 3 if capacity is free — the capacity itself is still never planned past.
  const shares = capacity === undefined ? undefined : fairShares(capacity, tenants);
  const given = new Map<string, number>();
  const order: string[] = [];
  while (free > 0) {
    let best: TenantDemand | undefined;
    let bestLoad = Number.POSITIVE_INFINITY;
    for (const t of ours) {
      const n = given.get(t.orgId) ?? 0;
      if (n >= t.held || (t.headroom !== undefined && n >= t.headroom)) continue;
      if (shares && t.inFlight + n >= Math.ceil(shares.get(t.orgId)! - 1e-9)) continue;
      const load = (t.inFlight + n) / t.weight;
      if (load < bestLoad || (load === bestLoad && best !== undefined && t.orgId < best.orgId)) {
        best = t;
        bestLoad = load;
      }
    }
    if (!best) break;
    given.set(best.orgId, (given.get(best.orgId) ?? 0) + 1);
    order.push(best.orgId);
    free -= 1;
  }
  return order;
}

/** The pure parts of tenant fairness: weighted max-min shares, the release plan, and the admission gate. */
import { describe, expect, it } from "vitest";
import { AdmissionGate, HELD_COUNT_CAP, refill } from "../../src/core/admission.js";
import { fairShares, planReleases, type TenantDemand } from "../../src/fairness/fair-share.js";
import { LimitTable, validateLimit, type DispatchLimit } from "../../src/core/limits.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";

const demand = (orgId: string, inFlight: number, held: number, extra: Partial<TenantDemand> = {}): TenantDemand => ({ orgId, weight: 1, inFlight, held, ours: true, ...extra });
const limit = (l: Partial<DispatchLimit>): DispatchLimit => ({ orgId: "", destination: "", maxInFlight: null, ratePerSec: null, burst: null, weight: null, ...l });

describe("fair shares", () => {
  it("split a capacity by weight, and give what a small tenant does not want to the others", () => {
    expect(fairShares(10, [demand("a", 10, 1000), demand("b", 0, 10)])).toEqual(new Map([["a", 5], ["b", 5]]));
    expect(fairShares(10, [demand("a", 10, 1000), demand("b", 0, 2)])).toEqual(new Map([["a", 8], ["b", 2]]));
    expect(fairShares(12, [demand("a", 0, 100, { weight: 3 }), demand("b", 0, 100)])).toEqual(new Map([["a", 9], ["b", 3]]));
  });

  it("a tenant behind another's deep backlog gets the next freed slot", () => {
    // alpha holds every slot but one, with thousands waiting; beta has one step held: beta goes, alpha does not.
    expect(planReleases(20, [demand("alpha", 19, 3000), demand("beta", 0, 1)])).toEqual(["beta"]);
    // Capacity full: nobody.
    expect(planReleases(20, [demand("alpha", 20, 3000), demand("beta", 0, 1)])).toEqual([]);
  });

  it("interleaves tenants, least served first, and never plans past the capacity", () => {
    const order = planReleases(6, [demand("a", 0, 100), demand("b", 0, 100), demand("c", 0, 1)]);
    // c wants 1; a and b share the other 5 (2.5 each, so one of them runs 3): six slots, six releases.
    expect(order).toEqual(["a", "b", "c", "a", "b", "a"]);
    expect(planReleases(6, [demand("a", 4, 100), demand("b", 0, 100)])).toEqual(["b", "b"]);
  });

  it("leaves the share of another coordinator's tenant free for it", () => {
    // beta belongs to another shard owner: alpha may take its own share only.
    expect(planReleases(10, [demand("alpha", 2, 100), demand("beta", 0, 100, { ours: false })])).toEqual(["alpha", "alpha", "alpha"]);
  });

  it("stops at a tenant's own headroom; without a capacity releases what the limits allow", () => {
    expect(planReleases(undefined, [demand("a", 1, 10, { headroom: 2 }), demand("b", 0, 1)])).toEqual(["b", "a", "a"]);
  });
});

describe("the admission gate", () => {
  it("admits anything when no limit governs the pair", () => {
    const gate = new AdmissionGate({ limits: new LimitTable([]), destinations: new Map(), tenants: new Map(), buckets: new Map() }, 0);
    for (let i = 0; i < 100; i++) expect(gate.admit("a", "role:x", false)).toEqual({ admit: true });
  });

  it("holds at a tenant's cap, counting what the batch admitted, and names the limit", () => {
    const limits = new LimitTable([limit({ orgId: "a", destination: "role:writer", maxInFlight: 3 })]);
    const gate = new AdmissionGate({ limits, destinations: new Map(), tenants: new Map([["a", { inFlight: 1, byDestination: new Map([["role:writer", 1]]), heldByDestination: new Map() }]]), buckets: new Map() }, 0);
    expect(gate.admit("a", "role:writer", false).admit).toBe(true);
    expect(gate.admit("a", "role:writer", false).admit).toBe(true);
    expect(gate.admit("a", "role:writer", false)).toEqual({ admit: false, reason: "queued behind tenant limit (3/3 in flight on role:writer)" });
    // Another destination of the same tenant is not capped.
    expect(gate.admit("a", "role:other", false).admit).toBe(true);
  });

  it("queues a new step behind held ones on a contended destination unless the releaser chose it", () => {
    const limits = new LimitTable([limit({ destination: "role:x", maxInFlight: 10 })]);
    const facts = () => ({ limits, destinations: new Map([["role:x", { inFlight: 2, held: 5 }]]), tenants: new Map(), buckets: new Map() });
    expect(new AdmissionGate(facts(), 0).admit("b", "role:x", false)).toEqual({ admit: false, reason: "queued behind 5 held step(s) on role:x (fair share)" });
    expect(new AdmissionGate(facts(), 0).admit("b", "role:x", true)).toEqual({ admit: true });
  });

  it("lets a sub-query of running work go ahead of held new work, but never past the capacity", () => {
    const limits = new LimitTable([limit({ destination: "role:x", maxInFlight: 3 })]);
    const facts = () => ({
      limits,
      destinations: new Map([["role:x", { inFlight: 2, held: 5 }]]),
      tenants: new Map([["b", { inFlight: 0, byDestination: new Map(), heldByDestination: new Map([["role:x", 2]]) }]]),
      buckets: new Map(),
    });
    expect(new AdmissionGate(facts(), 0).admit("b", "role:x", false)).toMatchObject({ admit: false, reason: "queued behind 2 earlier held step(s) of this tenant on role:x" });
    const gate = new AdmissionGate(facts(), 0);
    expect(gate.admit("b", "role:x", false, true)).toEqual({ admit: true });
    // The capacity (3) is now taken: the next sub-query is held, and counted as held.
    expect(gate.admit("b", "role:x", false, true)).toEqual({ admit: false, reason: "queued: role:x at capacity (3/3 in flight)" });
  });

  it("draws a token per dispatch and refills at the rate", () => {
    const limits = new LimitTable([limit({ orgId: "a", destination: "role:x", ratePerSec: 50, burst: 2 })]);
    const facts = { limits, destinations: new Map(), tenants: new Map(), buckets: new Map() };
    const gate = new AdmissionGate(facts, 1_000);
    expect(gate.admit("a", "role:x", false).admit).toBe(true);
    expect(gate.admit("a", "role:x", false).admit).toBe(true);
    expect(gate.admit("a", "role:x", false)).toEqual({ admit: false, reason: "queued behind tenant rate limit (50/s on role:x)" });
    expect(gate.changedBuckets()).toEqual([{ orgId: "a", destination: "role:x", tokens: 0, atMs: 1_000 }]);
    expect(refill({ tokens: 0, atMs: 1_000 }, { ratePerSec: 50, burst: 2 }, 1_020).tokens).toBeCloseTo(1);
  });
});

describe("limit validation", () => {
  it("refuses what cannot be meant, naming the field", () => {
    const code = (l: Partial<DispatchLimit>) => {
      try {
        validateLimit(limit(l));
        return "ok";
      } catch (error) {
        expect(error).toBeInstanceOf(SwitchyardError);
        return `${(error as SwitchyardError).code}:${String((error as SwitchyardError).details?.path)}`;
      }
    };
    expect(code({ orgId: "a", destination: "role:x", maxInFlight: 3 })).toBe("ok");
    expect(code({})).toBe(`${ErrorCode.InvalidArgument}:tenant`);
    expect(code({ orgId: "a", destination: "nowhere", maxInFlight: 3 })).toBe(`${ErrorCode.InvalidArgument}:destination`);
    expect(code({ orgId: "a", destination: "role:x", maxInFlight: 0 })).toBe(`${ErrorCode.InvalidArgument}:maxInFlight`);
    expect(code({ destination: "role:x", weight: 2, maxInFlight: 3 })).toBe(`${ErrorCode.InvalidArgument}:tenant`);
    expect(code({ orgId: "a", ratePerSec: 5 })).toBe(`${ErrorCode.InvalidArgument}:destination`);
    expect(code({ orgId: "a", weight: 1001 })).toBe(`${ErrorCode.InvalidArgument}:weight`);
    expect(code({ orgId: "a", destination: "role:x", burst: 3 })).toBe(`${ErrorCode.InvalidArgument}:burst`);
  });

  it("holds a keyed step at its key's limit, keeps a key's order, and lets the tenant's other keys go", () => {
    const group = (customer: string) => ({ key: `task.input.customerId="${customer}"`, limit: 2 });
    // No operator limit at all: a key governs on its own.
    const gate = new AdmissionGate({ limits: new LimitTable([]), destinations: new Map(), tenants: new Map(), buckets: new Map(), keys: new Map() }, 0);
    expect(gate.admit("a", "role:x", false, false, group("big")).admit).toBe(true);
    expect(gate.admit("a", "role:x", false, false, group("big")).admit).toBe(true);
    expect(gate.admit("a", "role:x", false, false, group("big"))).toEqual({ admit: false, reason: 'queued behind concurrency key task.input.customerId="big" (2/2 in flight)' });
    // A later step of the same key queues behind the held one, even if chosen by the releaser it is still at the limit.
    expect(gate.admit("a", "role:x", false, false, group("big"))).toEqual({ admit: false, reason: 'queued behind 1 earlier held step(s) of concurrency key task.input.customerId="big"' });
    expect(gate.admit("a", "role:x", true, false, group("big")).admit).toBe(false);
    // Another customer of the same tenant, and steps without a key, are not held behind it.
    expect(gate.admit("a", "role:x", false, false, group("small")).admit).toBe(true);
    expect(gate.admit("a", "role:x", false).admit).toBe(true);
    expect(gate.hasHeld("role:x")).toBe(true);
  });

  it("shows a held count at the read cap as 100+", () => {
    const limits = new LimitTable([limit({ destination: "role:x", maxInFlight: 10 })]);
    const facts = { limits, destinations: new Map([["role:x", { inFlight: 2, held: HELD_COUNT_CAP }]]), tenants: new Map(), buckets: new Map() };
    expect(new AdmissionGate(facts, 0).admit("b", "role:x", false)).toEqual({ admit: false, reason: "queued behind 100+ held step(s) on role:x (fair share)" });
  });
});

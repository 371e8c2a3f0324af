/** The sender's slots (send-slots.ts): a tenant's share of them, weighted, and the rooms a claim is given. */
import { describe, expect, it } from "vitest";
import { LimitTable } from "../../src/core/limits.js";
import { SendSlots } from "../../src/foreign/send-slots.js";

const weighted = (weights: Record<string, number>) =>
  new LimitTable(Object.entries(weights).map(([orgId, weight]) => ({ orgId, destination: "", maxInFlight: null, ratePerSec: null, burst: null, weight })));

describe("SendSlots", () => {
  it("gives each tenant its percent of the capacity times its weight, at least one, at most all", () => {
    const table = weighted({ heavy: 3, huge: 1000 });
    const slots = new SendSlots({ capacity: 64, tenantPercent: 25, limits: () => table });
    expect(slots.shareOf("anyone")).toBe(16);
    expect(slots.shareOf("heavy")).toBe(48);
    expect(slots.shareOf("huge")).toBe(64);
    expect(new SendSlots({ capacity: 3, tenantPercent: 10 }).shareOf("anyone")).toBe(1);
  });

  it("tells a claim how much room each tenant has left, and which are full", () => {
    const slots = new SendSlots({ capacity: 8, tenantPercent: 25, limits: () => weighted({ heavy: 2 }) });
    slots.add("b1", "busy");
    const b2 = slots.add("b2", "busy");
    slots.add("b3", "some");
    expect(slots.rooms()).toEqual({ free: 5, defaultRoom: 2, orgs: ["some", "heavy"], rooms: [1, 4], full: ["busy"] });
    slots.remove(b2);
    slots.remove(b2);
    expect(slots.size).toBe(2);
    expect(slots.rooms().full).toEqual([]);
  });

  it("aborts every call at once", () => {
    const slots = new SendSlots({ capacity: 2, tenantPercent: 50 });
    const a = slots.add("a", "x");
    const b = slots.add("b", "y");
    slots.abortAll(new Error("stop"));
    expect([a.controller.signal.aborted, b.controller.signal.aborted]).toEqual([true, true]);
    expect(slots.rooms().free).toBe(0);
  });
});

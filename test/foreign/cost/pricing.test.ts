/**
 * pricing.ts: which reported usage is taken (shapes, aliases, untrusted values) and how a hop is priced.
 */
import { describe, expect, it } from "vitest";
import { parsePushNotification } from "../../../src/foreign/a2a/push-body.js";
import { firstUsage, MAX_REPORTED_COST, priceHop, usageFrom } from "../../../src/foreign/pricing.js";

describe("usageFrom", () => {
  it("reads our camelCase shape", () => {
    expect(usageFrom({ usage: { cost: 0.42, inputTokens: 120, outputTokens: 30 } })).toEqual({ cost: 0.42, inputTokens: 120, outputTokens: 30 });
  });

  it("reads snake_case, OpenAI-style and LangChain-style aliases", () => {
    expect(usageFrom({ usage: { total_cost: 1.5, input_tokens: 10, output_tokens: 20 } })).toEqual({ cost: 1.5, inputTokens: 10, outputTokens: 20 });
    expect(usageFrom({ usage: { prompt_tokens: 7, completion_tokens: 9, total_tokens: 16 } })).toEqual({ inputTokens: 7, outputTokens: 9 });
    expect(usageFrom({ usage_metadata: { input_tokens: 677, output_tokens: 70, total_tokens: 747 } })).toEqual({ inputTokens: 677, outputTokens: 70 });
    expect(usageFrom({ token_usage: { totalCost: 2 } })).toEqual({ cost: 2 });
  });

  it("ignores malformed values field by field: strings, negatives, non-finite, huge, fractional tokens", () => {
    expect(usageFrom({ usage: { cost: "12" } })).toBeUndefined();
    expect(usageFrom({ usage: { cost: -5 } })).toBeUndefined();
    expect(usageFrom({ usage: { cost: Number.NaN } })).toBeUndefined();
    expect(usageFrom({ usage: { cost: MAX_REPORTED_COST * 10 } })).toBeUndefined();
    expect(usageFrom({ usage: { cost: 1e308 * 10 } })).toBeUndefined();
    expect(usageFrom({ usage: { inputTokens: 1.5 } })).toBeUndefined();
    expect(usageFrom({ usage: { cost: -1, inputTokens: 5 } })).toEqual({ inputTokens: 5 });
    // A bad value under one alias does not hide a good one under another.
    expect(usageFrom({ usage: { cost: "x", total_cost: 3 } })).toEqual({ cost: 3 });
  });

  it("ignores what is not a usage object at all", () => {
    for (const metadata of [undefined, null, 3, "usage", [], { usage: null }, { usage: [1, 2] }, { usage: "cost=1" }, { other: { cost: 1 } }, { usage: {} }]) {
      expect(usageFrom(metadata)).toBeUndefined();
    }
  });

  it("does not read inherited properties", () => {
    const proto = { cost: 5 };
    expect(usageFrom({ usage: Object.create(proto) as object })).toBeUndefined();
  });

  it("firstUsage takes the first metadata that reports usage", () => {
    expect(firstUsage(undefined, { usage: { cost: 1 } }, { usage: { cost: 2 } })).toEqual({ cost: 1 });
    expect(firstUsage({ usage: { cost: "bad" } }, { usage: { cost: 2 } })).toEqual({ cost: 2 });
    expect(firstUsage()).toBeUndefined();
  });
});

describe("priceHop", () => {
  const rates = { costEstimate: 0.5, costPerSecond: 2 };

  it("takes a reported cost as the price", () => {
    expect(priceHop(rates, { cost: 0.42, inputTokens: 100 }, 10_000)).toEqual({ cost: 0.42, pricedBy: "reported_usage" });
    expect(priceHop(rates, { cost: 0 }, 10_000)).toEqual({ cost: 0, pricedBy: "reported_usage" });
  });

  it("prices estimate + elapsed seconds x rate without a reported cost, tokens or not", () => {
    expect(priceHop(rates, undefined, 1_500)).toEqual({ cost: 3.5, pricedBy: "estimate_plus_elapsed" });
    expect(priceHop(rates, { inputTokens: 1_000, outputTokens: 10 }, 1_500)).toEqual({ cost: 3.5, pricedBy: "estimate_plus_elapsed" });
    expect(priceHop({ costEstimate: 0.5, costPerSecond: 0 }, undefined, 99_000)).toEqual({ cost: 0.5, pricedBy: "estimate_plus_elapsed" });
  });

  it("never goes below the estimate (clock skew) nor trusts non-finite inputs", () => {
    expect(priceHop(rates, undefined, -5_000)).toEqual({ cost: 0.5, pricedBy: "estimate_plus_elapsed" });
    expect(priceHop(rates, undefined, Number.NaN)).toEqual({ cost: 0.5, pricedBy: "estimate_plus_elapsed" });
    expect(priceHop({ costEstimate: Number.NaN, costPerSecond: Number.POSITIVE_INFINITY }, undefined, 1_000)).toEqual({ cost: 0, pricedBy: "estimate_plus_elapsed" });
  });
});

describe("usage in push bodies", () => {
  const parse = (body: unknown, type = "application/a2a+json") => parsePushNotification(type, Buffer.from(JSON.stringify(body)), { maxBytes: 64 * 1024 });

  it("v1.0 status update: the event's metadata, else its status message's", () => {
    const status = { state: "TASK_STATE_COMPLETED" };
    expect(parse({ statusUpdate: { taskId: "t1", contextId: "c", status, metadata: { usage: { cost: 0.3 } } } }).usage).toEqual({ cost: 0.3 });
    const message = { messageId: "m", role: "ROLE_AGENT", parts: [{ text: "done" }], metadata: { usage: { input_tokens: 4 } } };
    expect(parse({ statusUpdate: { taskId: "t1", contextId: "c", status: { ...status, message } } }).usage).toEqual({ inputTokens: 4 });
    expect(parse({ statusUpdate: { taskId: "t1", contextId: "c", status } }).usage).toBeUndefined();
  });

  it("v0.3 Task snapshot: the Task's metadata", () => {
    const body = { kind: "task", id: "t1", contextId: "c", status: { state: "completed" }, artifacts: [], metadata: { usage: { cost: 1.25, outputTokens: 8 } } };
    expect(parse(body, "application/json").usage).toEqual({ cost: 1.25, outputTokens: 8 });
  });

  it("malformed usage neither fails the push nor prices anything", () => {
    const parsed = parse({ statusUpdate: { taskId: "t1", contextId: "c", status: { state: "TASK_STATE_COMPLETED" }, metadata: { usage: { cost: "lots" } } } });
    expect(parsed.state).toBe("completed");
    expect(parsed.usage).toBeUndefined();
  });
});

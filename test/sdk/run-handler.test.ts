/**
 * runHandler: a handler against the fake context, with the real harness's rules (markers, usage, JSON).
 */
import { describe, expect, it } from "vitest";
import { NonRetryableError, type Handler } from "../../src/sdk/harness.js";
import { errorInfoOf, runHandler } from "../../src/sdk/testing.js";

interface Question { topic: string }

describe("runHandler", () => {
  it("returns a typed handler's output after JSON, with the usage it reported", async () => {
    const handler: Handler<Question, { title: string; at: string }> = (work, ctx) => {
      ctx.usage({ cost: 0.5, inputTokens: 3 });
      ctx.usage({ cost: 0.25 });
      return { title: work.input.topic.toUpperCase(), at: new Date(0) as unknown as string };
    };
    const run = await runHandler(handler, { input: { topic: "otters" } });
    expect(run.output).toEqual({ title: "OTTERS", at: "1970-01-01T00:00:00.000Z" });
    expect(run.usage).toEqual({ cost: 0.75, inputTokens: 3, outputTokens: 0 });
    expect(run.turns.map((t) => t.outcome)).toEqual(["completed"]);
  });

  it("runs a delegation round trip: the next turn sees the reply and the checkpoint", async () => {
    const handler: Handler<Question> = async (work, ctx) => {
      if (!work.resume) return ctx.delegate("role:analyst", { topic: work.input.topic }, { state: { asked: work.input.topic } });
      const { reply, state } = work.resume;
      return { state, status: reply.status, analysis: await ctx.readResult(reply.resultRef), depth: reply.depth };
    };
    const asked: unknown[] = [];
    const run = await runHandler(handler, { input: { topic: "otters" }, stepId: "plan" }, {
      delegateReply: (query) => {
        asked.push([query.to, query.payload]);
        return { summary: `about ${(query.payload as Question).topic}` };
      },
    });
    expect(asked).toEqual([["role:analyst", { topic: "otters" }]]);
    expect(run.output).toEqual({ state: { asked: "otters" }, status: "ok", analysis: { summary: "about otters" }, depth: 1 });
    expect(run.turns.map((t) => [t.turn, t.outcome, t.resumedBy !== undefined])).toEqual([[0, "delegated", false], [1, "completed", true]]);
    expect(run.replies[0]!.sourceStepId).toBe("plan.d1");
  });

  it("fans out: one resumed turn per reply, outstanding shrinking, a failed delegate as an error reply", async () => {
    const handler: Handler<null> = async (work, ctx) => {
      if (!work.resume) {
        return ctx.delegateAll([{ to: "role:a", payload: 1, correlationId: "a" }, { to: "role:b", payload: 2, correlationId: "b" }, { to: "role:c", payload: 3, correlationId: "c" }], { state: [] });
      }
      const seen = [...(work.resume.state as string[]), `${work.resume.reply.correlationId}:${work.resume.reply.status}:${work.resume.outstanding.join("")}`];
      return work.resume.outstanding.length > 0 ? ctx.awaitMore(seen) : seen;
    };
    const run = await runHandler(handler, { input: null }, {
      delegateReply: (q) => {
        if (q.correlationId === "b") throw new NonRetryableError("b refuses", { code: "B_REFUSED" });
        return q.payload;
      },
    });
    expect(run.output).toEqual(["a:ok:bc", "b:error:c", "c:ok:"]);
    expect(run.replies[1]!.error).toEqual({ code: "B_REFUSED", message: "b refuses" });
    expect(run.turns).toHaveLength(4);
  });

  it("records replies still outstanding when the handler finishes early as orphans", async () => {
    const handler: Handler<null> = (work, ctx) => (work.resume ? "enough" : ctx.delegateAll([{ to: "role:a", payload: 1, correlationId: "a" }, { to: "role:b", payload: 2, correlationId: "b" }]));
    const run = await runHandler(handler, { input: null }, { delegateReply: () => "x" });
    expect(run.output).toBe("enough");
    expect(run.orphans).toEqual(["b"]);
  });

  it("fails a handler that delegates without delegateReply, naming the destination", async () => {
    const handler: Handler = (_work, ctx) => ctx.delegate("role:analyst", {});
    await expect(runHandler(handler, { input: {} })).rejects.toThrow(/delegated to role:analyst but runHandler has no delegateReply/);
  });

  it("keeps the harness's rules: two markers in a turn, a bad usage report, output that is not JSON", async () => {
    const twice: Handler = (_work, ctx) => {
      ctx.delegate("role:a", 1);
      return ctx.delegate("role:b", 2);
    };
    await expect(runHandler(twice, { input: null }, { delegateReply: () => 1 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(runHandler((_w, ctx) => ctx.usage({ cost: -1 }), { input: null })).rejects.toThrow(/usage.cost must be a non-negative number/);
    await expect(runHandler(() => ({ big: 1n }), { input: null })).rejects.toThrow(/handler output is not JSON-serialisable/);
    await expect(runHandler(() => "x".repeat(100), { input: null }, { maxPayloadBytes: 50 })).rejects.toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
  });

  it("passes heartbeats to onHeartbeat and refuses them once aborted", async () => {
    const controller = new AbortController();
    const beats: number[] = [];
    const handler: Handler = async (_work, ctx) => {
      await ctx.heartbeat();
      controller.abort();
      await ctx.heartbeat();
      return "unreachable";
    };
    await expect(runHandler(handler, { input: null }, { abort: controller.signal, onHeartbeat: (b) => void beats.push(b.count) })).rejects.toMatchObject({ code: "CANCELLED" });
    expect(beats).toEqual([1]);
  });

  it("shows how the harness reports a NonRetryableError, a plain throw and the old INVALID_ARGUMENT", async () => {
    const refuse: Handler = () => {
      throw new NonRetryableError("not an invoice", { code: "BAD_INVOICE" });
    };
    const error = await runHandler(refuse, { input: null }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NonRetryableError);
    expect(errorInfoOf(error)).toEqual({ code: "BAD_INVOICE", message: "not an invoice", retryable: false });
    expect(errorInfoOf(new Error("flaky"))).toEqual({ code: "HANDLER_FAILED", message: "flaky", retryable: true });
    expect(errorInfoOf(new NonRetryableError("no"))).toMatchObject({ code: "NON_RETRYABLE", retryable: false });
    expect(() => new NonRetryableError("x", { code: "lower case" })).toThrow(/code must be 1-64 upper-case/);
  });

  it("answers ctx.reply as the harness would without a reply address, and reads seeded results", async () => {
    const handler: Handler = async (_work, ctx) => ({ reply: (await ctx.reply("hi")).status, seeded: await ctx.readResult("step:t/s") });
    const run = await runHandler(handler, { input: null }, { results: { "step:t/s": 42 } });
    expect(run.output).toEqual({ reply: "refused", seeded: 42 });
    expect(run.posted).toEqual(["hi"]);
    await expect(runHandler(async (_w, ctx) => ctx.readResult("step:t/none"), { input: null })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

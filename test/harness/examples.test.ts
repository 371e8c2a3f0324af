/**
 * The demo's example handlers behind real harnesses, with the test playing the coordinator's part: it routes the
 * researcher's QUERY to the analyst as WORK, stores the analyst's output, and answers the researcher with a REPLY;
 * it answers the orchestrator's fan-out one REPLY at a time, in an order of its choosing.
 */
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EndpointKind, EnvelopeKind, ResultStatus, type Envelope } from "../../src/bus/codec.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { formatStepResultRef, type ResultReader } from "../../src/harness/result-reader.js";
import analyst from "../../examples/handlers/analyst.js";
import echo from "../../examples/handlers/echo.js";
import orchestrator from "../../examples/handlers/orchestrator.js";
import publisher from "../../examples/handlers/publisher.js";
import researcher from "../../examples/handlers/researcher.js";
import writer from "../../examples/handlers/writer.js";
import { createBusFixture, json, replyEnvelope, workEnvelope, type BusFixture } from "./fixtures.js";

let fx: BusFixture;
beforeEach(async () => {
  fx = await createBusFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

describe("example handlers", () => {
  it("researcher delegates to the analyst and, resumed, returns findings with the analysis", async () => {
    const stored = new Map<string, unknown>();
    const reader: ResultReader = {
      async read(orgId, ref) {
        if (orgId !== "org-a" || !stored.has(ref)) throw new SwitchyardError(ErrorCode.NotFound, ref);
        return stored.get(ref);
      },
    };
    fx.harness({ role: "researcher", handler: researcher, resultReader: reader }).start();
    fx.harness({ role: "analyst", handler: analyst }).start();
    const taskId = randomUUID();
    const taskInput = { topic: "tides" };
    const research = workEnvelope({ taskId, stepId: "research", input: { task: taskInput, steps: {} } });
    await fx.publish("role:researcher", research);

    const [query] = await fx.sent(1);
    // One sub-query: the form coordinators read before fan-out, addressed to the delegate.
    expect(query).toMatchObject({ kind: EnvelopeKind.QUERY, stepId: "research", destination: { kind: EndpointKind.ROLE, id: "analyst" } });
    const { query: question, state } = json(query!) as { query: unknown; state: unknown };
    const correlationId = query!.correlationId;
    expect(question).toEqual({ topic: "tides" });

    // Coordinator: dispatch the sub-query as WORK on a delegation step.
    const delegateStep = "research.d1";
    await fx.publish("role:analyst", workEnvelope({ taskId, stepId: delegateStep, depth: 1, input: question }));
    const analystResult = (await fx.sent(2))[1]!;
    expect(analystResult).toMatchObject({ kind: EnvelopeKind.RESULT, status: ResultStatus.OK, stepId: delegateStep });
    expect(analystResult.usage?.cost).toBeCloseTo(0.5);
    stored.set(formatStepResultRef({ taskId, stepId: delegateStep }), json(analystResult));

    // Coordinator: the REPLY to the origin.
    await fx.publish(
      "role:researcher",
      replyEnvelope({ taskId, stepId: "research", correlationId, sourceStepId: delegateStep, input: { task: taskInput, steps: {} }, state }),
    );
    const final = (await fx.sent(3))[2] as Envelope;
    expect(final).toMatchObject({ kind: EnvelopeKind.RESULT, status: ResultStatus.OK, stepId: "research" });
    const output = json(final) as { findings: string[]; analysis: { topic: string } };
    expect(output.findings.length).toBeGreaterThan(0);
    expect(output.analysis).toEqual(json(analystResult));
    expect(output.analysis.topic).toBe("tides");
  });

  it("orchestrator asks three specialists in one QUERY, keeps waiting while answers are outstanding, and gathers them", async () => {
    const taskId = randomUUID();
    const stored = new Map<string, unknown>();
    const reader: ResultReader = {
      async read(_orgId, ref) {
        if (!stored.has(ref)) throw new SwitchyardError(ErrorCode.NotFound, ref);
        return stored.get(ref);
      },
    };
    fx.harness({ role: "orchestrator", handler: orchestrator, resultReader: reader }).start();
    const input = { task: { topic: "tides" }, steps: {} };
    await fx.publish("role:orchestrator", workEnvelope({ taskId, stepId: "gather", input }));

    const [fanOut] = await fx.sent(1);
    expect(fanOut).toMatchObject({ kind: EnvelopeKind.QUERY, stepId: "gather", destination: { kind: EndpointKind.COORDINATOR } });
    const asked = json(fanOut!) as { queries: Array<{ to: string; correlationId: string; query: unknown }>; state: unknown };
    expect(asked.queries.map((q) => `${q.correlationId} → ${q.to}`)).toEqual(["fact-check → foreign:fact-checker", "critique → role:critic", "analysis → role:analyst"]);
    expect(asked.queries[0]!.query).toMatchObject({ skill: "fact-check", topic: "tides" });

    // Coordinator: the answers in an order unlike the asking order, one of them failed; each REPLY carries the
    // state the previous turn stood down with and what is still outstanding.
    const analysis = { summary: "tides follow the moon" };
    const critique = { concerns: ["who measured it"] };
    stored.set(formatStepResultRef({ taskId, stepId: "gather.d3" }), analysis);
    stored.set(formatStepResultRef({ taskId, stepId: "gather.d2" }), critique);
    const answers = [
      { correlationId: "analysis", sourceStepId: "gather.d3", outstanding: ["fact-check", "critique"] },
      { correlationId: "fact-check", sourceStepId: "gather.d1", outstanding: ["critique"], status: "error" as const, error: { code: "FOREIGN_FAILED", message: "agent said no" } },
      { correlationId: "critique", sourceStepId: "gather.d2", outstanding: [] },
    ];
    let state = asked.state;
    for (const [i, answer] of answers.entries()) {
      await fx.publish("role:orchestrator", replyEnvelope({ taskId, stepId: "gather", input, state, turn: i + 1, ...answer }));
      const sent = (await fx.sent(i + 2))[i + 1]!;
      expect(sent.turn).toBe(i + 1);
      if (answer.outstanding.length > 0) {
        // ctx.awaitMore: a QUERY that asks nothing and carries the new checkpoint.
        expect(sent).toMatchObject({ kind: EnvelopeKind.QUERY, stepId: "gather" });
        const waiting = json(sent) as { queries: unknown[]; state: unknown };
        expect(waiting.queries).toEqual([]);
        state = waiting.state;
      } else {
        expect(sent).toMatchObject({ kind: EnvelopeKind.RESULT, status: ResultStatus.OK, stepId: "gather" });
        const output = json(sent) as { analysis: unknown; critique: unknown; factCheck: unknown; failed: Record<string, string>; findings: string[]; turns: Array<{ turn: number; took: string; outstanding: string[] }> };
        expect(output.analysis).toEqual(analysis);
        expect(output.critique).toEqual(critique);
        expect(output.factCheck).toBeNull();
        expect(output.failed).toEqual({ "fact-check": "FOREIGN_FAILED: agent said no" });
        expect(output.findings).toContain("open concern: who measured it");
        expect(output.turns.map((t) => [t.turn, t.took, t.outstanding])).toEqual(answers.map((a, n) => [n + 1, a.correlationId, a.outstanding]));
      }
    }
  });

  it("writer drafts from the research output; publisher publishes; echo echoes", async () => {
    const ctx = {
      usage: () => {},
      logger: { info: () => {} },
    } as never;
    const base = { orgId: "o", taskId: "t-1", stepId: "s", attempt: 1, envelopeId: "e", depth: 0, turn: 0, clearanceFloor: 0, replyTo: null };
    const draft = (await writer(
      { ...base, input: { task: { topic: "tides" }, steps: { research: { topic: "tides", findings: ["moon pulls"], analysis: { summary: "big" } } } } },
      ctx,
    )) as { title: string; draft: string };
    expect(draft.title).toBe("tides");
    expect(draft.draft).toContain("- moon pulls");
    expect(draft.draft).toContain("big");
    expect(await publisher({ ...base, input: { steps: { write: draft } } }, ctx)).toEqual({ published: true, url: "https://example.com/posts/t-1" });
    expect(await echo({ ...base, input: [1, "two"] }, ctx)).toEqual([1, "two"]);
  });
});

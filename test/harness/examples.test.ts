/**
 * The demo's example handlers behind real harnesses, with the test playing the coordinator's part: it routes the
 * researcher's QUERY to the analyst as WORK, stores the analyst's output, and answers the researcher with a REPLY.
 */
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EndpointKind, EnvelopeKind, ResultStatus, type Envelope } from "../../src/bus/codec.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { formatStepResultRef, type ResultReader } from "../../src/harness/result-reader.js";
import analyst from "../../examples/handlers/analyst.js";
import echo from "../../examples/handlers/echo.js";
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
    expect(query).toMatchObject({ kind: EnvelopeKind.QUERY, stepId: "research", destination: { kind: EndpointKind.COORDINATOR } });
    const { queries, state } = json(query!) as { queries: Array<{ to: string; correlationId: string; query: unknown }>; state: unknown };
    expect(queries).toHaveLength(1);
    const [{ to, correlationId, query: question }] = queries as [(typeof queries)[number]];
    expect(to).toBe("role:analyst");
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

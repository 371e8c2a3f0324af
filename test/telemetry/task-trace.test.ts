/**
 * One task, one trace (issue 12 §3): a real workflow run in-process — a role that delegates a sub-query, a foreign
 * A2A agent that pushes its result back, a last role — recorded with an in-memory exporter. Every span of the run is
 * in the trace the start opened, each hop the child of the envelope that caused it, each turn the child of the hop
 * that sent its work; the A2A requests carry the call span's traceparent. With tracing off, nothing is recorded.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { trace } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-node";
import { listBridges } from "../../src/store/bridges/postgres-bridge-store.js";
import { parseTraceparent } from "../../src/telemetry/traceparent.js";
import { startA2AAgent, type RunningA2AAgent } from "../support/a2a-agents.js";
import type { TestRuntime } from "../support/runtime.js";
import { Workers } from "../support/workers.js";
import { createForeignRuntime, type ForeignTestRuntime } from "../foreign/integration/support.js";
import { createTestTracing, describeSpans, parentOf, type TestTracing } from "./support.js";

const ORG = "acme";

describe("tracing a task", () => {
  let tracing: TestTracing;
  let rt: ForeignTestRuntime;
  let agent: RunningA2AAgent;
  let workers: Workers;

  beforeAll(() => {
    tracing = createTestTracing();
  });
  afterAll(async () => {
    await tracing.close();
  });

  beforeEach(async () => {
    tracing.exporter.reset();
    rt = await createForeignRuntime();
    agent = await startA2AAgent({ dialect: "1.0", behaviour: "complete" });
    await rt.register(ORG, { agentKey: "checker", baseUrl: agent.baseUrl });
    await rt.submit(ORG, `
name: traced
steps:
  - { id: research, to: "role:researcher" }
  - { id: check, to: "foreign:checker", needs: [research] }
  - { id: write, to: "role:writer", needs: [check] }
`);
    workers = new Workers(rt as unknown as TestRuntime);
    workers.start("researcher", async (work, ctx) => {
      if (!work.resume) return ctx.delegate("role:analyst", { topic: "x" }, { state: { asked: true } });
      return { researched: true };
    });
    workers.start("analyst", async () => ({ analysis: 42 }));
    workers.start("writer", async () => ({ written: true }));
    rt.startCoordinator();
  });
  afterEach(async () => {
    tracing.off();
    await workers.stop();
    await agent.close();
    await rt.cleanup();
  });

  async function runTask(): Promise<string> {
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "traced", input: { topic: "trains" } });
    const view = await rt.finished(ORG, taskId);
    expect(view.status, JSON.stringify(view.steps)).toBe("completed");
    return taskId;
  }

  it("records start → hops → turns (a delegated sub-query too) → foreign → completion as one trace", async () => {
    tracing.on();
    // The caller's span (an API request's, in a gateway): the task's trace continues it.
    const taskId = await trace.getTracer("test").startActiveSpan("client", { root: true }, async (client) => {
      try {
        return await runTask();
      } finally {
        client.end();
      }
    });
    // The last hop's span ends right after its commit; the turn spans after their publish.
    const all = await settled(() => tracing.spans());
    const client = one(all, "client", describeSpans(all));
    const spans = all.filter((s) => s.spanContext().traceId === client.spanContext().traceId);
    const picture = describeSpans(spans);
    // One trace: every span naming the task is in the client's.
    const ofTask = all.filter((s) => s.attributes["switchyard.task"] === taskId);
    expect(ofTask.length).toBeGreaterThan(10);
    expect(ofTask.filter((s) => !spans.includes(s)).map((s) => s.name), describeSpans(all)).toEqual([]);
    const start = one(spans, "switchyard.task.start", picture);
    expect(parentOf(start), picture).toBe(client.spanContext().spanId);

    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    const parent = (s: ReadableSpan) => byId.get(parentOf(s) ?? "");
    const hops = spans.filter((s) => s.name.startsWith("switchyard.hop"));
    const turns = spans.filter((s) => s.name === "switchyard.turn");

    // The first hop is the start's child and dispatches `research` (governor + audit + commit events).
    const first = one(hops, "switchyard.hop task_started", picture);
    expect(parent(first), picture).toBe(start);
    expect(first.attributes).toMatchObject({ "switchyard.tenant": ORG, "switchyard.action": "dispatch", "switchyard.verdict": "allow", "switchyard.step": "research" });
    expect(first.attributes["switchyard.audit.seq"]).toEqual(expect.any(Number));
    // Started inline (TaskService): the commit is the start's own transaction, after the span ends.
    expect(first.events.map((e) => e.name)).toEqual(["governor", "audit", "applied"]);

    // research: WORK → turn (delegates) → QUERY hop → analyst turn → RESULT hop → REPLY → research turn again.
    const researchTurns = turns.filter((t) => t.attributes["switchyard.role"] === "role:researcher");
    expect(researchTurns, picture).toHaveLength(2);
    expect(parent(researchTurns[0]!), picture).toBe(first);
    expect(researchTurns[0]!.attributes["switchyard.outcome"]).toBe("delegated");
    const query = one(hops, "switchyard.hop query", picture);
    expect(parent(query), picture).toBe(researchTurns[0]);
    expect(query.attributes["switchyard.action"]).toBe("sub_query");
    const analystTurn = one(turns.filter((t) => t.attributes["switchyard.role"] === "role:analyst"), "switchyard.turn", picture);
    expect(parent(analystTurn), picture).toBe(query);
    const analystResult = hops.find((h) => parent(h) === analystTurn);
    expect(analystResult?.name, picture).toBe("switchyard.hop result");
    expect(analystResult!.attributes["switchyard.action"]).toBe("reply");
    expect(parent(researchTurns[1]!), picture).toBe(analystResult);
    expect(researchTurns[1]!.attributes["switchyard.outcome"]).toBe("completed");

    // research's RESULT dispatches the foreign hop: egress → A2A SendMessage (traceparent header) → callback → RESULT.
    const researchResult = hops.find((h) => parent(h) === researchTurns[1]);
    expect(researchResult?.attributes["switchyard.action"], picture).toBe("a2a_egress");
    const egress = one(spans, "switchyard.egress foreign:checker", picture);
    expect(parent(egress), picture).toBe(researchResult);
    const send = one(spans, "switchyard.a2a SendMessage", picture);
    expect(parent(send), picture).toBe(egress);
    expect(send.attributes["http.response.status_code"]).toBe(200);
    expect(agent.traceparents.map((t) => parseTraceparent(t)?.spanId)).toContain(send.spanContext().spanId);
    const [bridge] = await listBridges(rt.pool, ORG, taskId);
    expect(parseTraceparent(bridge!.traceparent)?.spanId).toBe(researchResult!.spanContext().spanId);
    const callbacks = spans.filter((s) => s.name === "switchyard.callback");
    expect(callbacks.length, picture).toBeGreaterThan(0);
    for (const callback of callbacks) expect(parent(callback), picture).toBe(researchResult);
    const foreignResult = hops.find((h) => h.attributes["switchyard.step"] === "write" && h.attributes["switchyard.action"] === "dispatch");
    expect(foreignResult, picture).toBeDefined();
    // The RESULT is written by the push that told the end, or by the poll that confirmed its artifacts.
    expect([...callbacks, ...spans.filter((s) => s.name === "switchyard.poll")], picture).toContain(parent(foreignResult!));
    for (const poll of spans.filter((s) => s.name === "switchyard.poll")) expect(parent(poll), picture).toBe(researchResult);

    // write: WORK → turn → RESULT → the hop that completes the task.
    const writeTurn = one(turns.filter((t) => t.attributes["switchyard.role"] === "role:writer"), "switchyard.turn", picture);
    expect(parent(writeTurn), picture).toBe(foreignResult);
    const last = hops.find((h) => parent(h) === writeTurn);
    expect(last?.name, picture).toBe("switchyard.hop result");
    expect(last!.events.map((e) => e.name)).toContain("commit");
  });

  it("records no span and stores no trace context when tracing is off", async () => {
    tracing.off();
    const taskId = await runTask();
    expect(describeSpans(tracing.spans())).toBe("");
    const { rows } = await rt.pool.query("SELECT traceparent FROM tasks WHERE id = $1", [taskId]);
    expect(rows[0].traceparent).toBeNull();
    const [bridge] = await listBridges(rt.pool, ORG, taskId);
    expect(bridge!.traceparent).toBeNull();
    expect(agent.traceparents).toEqual([]);
  });
});

function one(spans: readonly ReadableSpan[], name: string, picture: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  expect(found.length, `${name} in\n${picture}`).toBe(1);
  return found[0]!;
}

/** The spans once their count stopped growing (the last hop's and turns' spans end just after the task is read done). */
async function settled(read: () => ReadableSpan[]): Promise<ReadableSpan[]> {
  let last = -1;
  for (;;) {
    const spans = read();
    if (spans.length === last) return spans;
    last = spans.length;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

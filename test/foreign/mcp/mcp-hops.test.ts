/**
 * MCP as a foreign transport, end to end: a workflow step `foreign:KEY` whose agent is a REAL MCP server
 * (test/support/mcp-server.ts, @modelcontextprotocol/sdk over Streamable HTTP on loopback) resumes through the normal
 * RESULT path; a tool error fails the step closed; a tool past the step deadline times out and is not called again for
 * a non-idempotent agent; a server that is down is not-sent and opens the breaker; a sender that dies mid-call never
 * makes the call twice.
 */
import { createServer, type AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAudit } from "../../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../../src/governance/audit-verify.js";
import { createA2AForeign } from "../../../src/foreign/a2a-foreign.js";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import type { TransportSendRequest } from "../../../src/foreign/transport.js";
import { startMcpServer, type RunningMcpServer } from "../../support/mcp-server.js";
import { waitFor } from "../../support/runtime.js";
import { Workers } from "../../support/workers.js";
import { createForeignRuntime, type ForeignTestRuntime } from "../integration/support.js";

const ORG = "acme";
const CRASH = `
name: crash
steps:
  - { id: b, to: "foreign:tools", timeout: 1500ms, retries: 2, backoff: 10ms }
`;

describe("FOREIGN over MCP", () => {
  let rt: ForeignTestRuntime;
  let server: RunningMcpServer | undefined;
  let workers: Workers | undefined;

  afterEach(async () => {
    afterRelease.splice(0).forEach((release) => release());
    await workers?.stop();
    workers = undefined;
    await server?.close();
    server = undefined;
    await rt.cleanup();
  });

  /**
   * The runtime's first MCP send "crashes" mid-call: `cut()` drops its connection (the tool keeps running at the
   * server), and the sender's promise hangs, as if the process were gone, until `release()` (a restart; its late
   * failure then finds the bridge closed). Later sends go through.
   */
  function crashFirstSend(): { cut(): void; release(): void } {
    const transport = rt.a2a!.transports.for({ protocol: "mcp" });
    const send = transport.send.bind(transport);
    const cut = new AbortController();
    const release = new AbortController();
    let sends = 0;
    transport.send = (request: TransportSendRequest) => {
      if (++sends > 1) return send(request);
      void send({ ...request, signal: cut.signal }).catch(() => undefined);
      return new Promise((_, reject) => release.signal.addEventListener("abort", () => reject(new Error("the crashed sender restarted"))));
    };
    afterRelease.push(() => release.abort());
    return { cut: () => cut.abort(), release: () => release.abort() };
  }
  const afterRelease: Array<() => void> = [];

  async function registerTool(tool: string, extra: Record<string, unknown> = {}, url = server!.url): Promise<void> {
    await rt.register(ORG, { agentKey: "tools", baseUrl: url, protocol: "mcp", tool, skills: [], ...extra });
  }

  describe("with a short quiet timeout (egress total 1 s)", () => {
    beforeEach(async () => {
      rt = await createForeignRuntime({ totalTimeoutMs: 1_000 });
      rt.startCoordinator();
    });

    const LONG = `
name: long
steps:
  - { id: b, to: "foreign:tools", timeout: 20s }
`;

    it("keeps a call alive past the quiet timeout while the tool sends progress, up to the step deadline", async () => {
      server = await startMcpServer({ progressEveryMs: 200 });
      await registerTool("slow");
      const transport = rt.a2a!.transports.for({ protocol: "mcp" });
      const send = transport.send.bind(transport);
      // When each progress notification reached us: they must arrive while the tool runs, not with its answer.
      const seen: number[] = [];
      transport.send = (request: TransportSendRequest) => send({ ...request, progress: () => seen.push(Date.now()) });
      await rt.submit(ORG, LONG);
      const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "long", input: { ms: 3000 } });
      const task = await rt.finished(ORG, taskId, 10_000);
      expect(task.status).toBe("completed");
      expect(task.steps[0]).toMatchObject({ attempts: 1, output: "slept 3000" });
      expect(seen.length).toBeGreaterThanOrEqual(10);
      expect(seen.at(-1)! - seen[0]!).toBeGreaterThan(2_000);
    }, 30_000);

    it("gives up on a call that goes quiet for the quiet timeout: the step fails closed, the tool is not called again", async () => {
      server = await startMcpServer({ progress: false });
      await registerTool("slow");
      await rt.submit(ORG, LONG);
      const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "long", input: { ms: 3000 } });
      const task = await rt.finished(ORG, taskId);
      expect(task).toMatchObject({ status: "failed", error: { code: "FOREIGN_FAILED" } });
      expect(task.error!.message).toMatch(/no answer within 1000 ms/);
      expect(server.callsOf("slow")).toBe(1);
    });
  });

  describe("with one coordinator", () => {
    beforeEach(async () => {
      rt = await createForeignRuntime({ breakerVolume: 2, breakerErrorPercent: 50, breakerResetMs: 60_000 });
      rt.startCoordinator();
    });

    it("runs role → MCP tool → role: the tool's structured result is the step's output, audited, priced by its reported usage", async () => {
      server = await startMcpServer({ name: "tool-box", echoMeta: { usage: { cost: 0.75, input_tokens: 10, output_tokens: 4 } } });
      await registerTool("echo", { costEstimate: 3 });
      workers = new Workers(rt as never);
      const seenByC: unknown[] = [];
      workers.start("prep", async (work) => ({ prepared: (work.input as { task: unknown }).task }));
      workers.start("finish", async (work) => {
        seenByC.push(work.input);
        return { done: true };
      });
      await rt.submit(ORG, `
name: abc
steps:
  - { id: a, to: "role:prep" }
  - { id: b, to: "foreign:tools", cost_estimate: 1 }
  - { id: c, to: "role:finish" }
`);
      const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "abc", input: { topic: "tides" } });
      const task = await rt.finished(ORG, taskId);
      expect(task.status).toBe("completed");
      const sent = { task: { topic: "tides" }, steps: { a: { prepared: { topic: "tides" } } } };
      expect(server.calls).toEqual([{ tool: "echo", args: sent }]);
      expect(task.steps.find((s) => s.id === "b")).toMatchObject({ status: "completed", attempts: 1, cost: 0.75, output: { echo: sent } });
      expect(seenByC).toEqual([{ task: { topic: "tides" }, steps: { b: { echo: sent } } }]);

      const [bridge] = await listBridges(rt.pool, ORG, taskId);
      expect(bridge).toMatchObject({ status: "completed", dialect: "mcp", foreignTaskId: `mcp:${bridge!.id}`, lastState: "completed" });
      const { rows } = await rt.pool.query("SELECT delivery, sent_at, usage, priced_by FROM a2a_bridge WHERE id = $1", [bridge!.id]);
      expect(rows[0]).toMatchObject({ delivery: "call", sent_at: expect.any(Date), priced_by: "reported_usage", usage: { cost: 0.75, inputTokens: 10, outputTokens: 4 } });

      const audit = await listAudit(rt.pool, ORG, { taskId });
      expect(audit.map((a) => `${a.action}:${a.stepId}:${a.verdict}:${a.actor}`)).toEqual([
        "dispatch:a:allow:coordinator",
        "result:a:accepted:worker:role:prep",
        "a2a_egress:b:allow:coordinator",
        "result:b:accepted:foreign:tools",
        "dispatch:c:allow:coordinator",
        "result:c:accepted:worker:role:finish",
      ]);
      expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
    });


    it("fails the step closed when the tool reports an error (isError): FOREIGN_FAILED with the tool's text", async () => {
      server = await startMcpServer();
      await registerTool("fails");
      await rt.submit(ORG, `
name: one
steps:
  - { id: b, to: "foreign:tools" }
`);
      const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "one", input: { q: 1 } });
      const task = await rt.finished(ORG, taskId);
      expect(task).toMatchObject({ status: "failed", error: { code: "FOREIGN_FAILED", stepId: "b" } });
      expect(task.error!.message).toContain("the test tool was told to fail");
      expect(server.callsOf("fails")).toBe(1);
      expect((await listBridges(rt.pool, ORG, taskId))[0]).toMatchObject({ status: "failed", lastState: "failed" });
      const audit = await listAudit(rt.pool, ORG, { taskId });
      expect(audit.map((a) => `${a.action}:${a.verdict}`)).toEqual(["a2a_egress:allow", "result:failed"]);
    });

    it("times out a tool that runs past the step's deadline and does not call it again for a non-idempotent agent", async () => {
      server = await startMcpServer();
      await registerTool("count");
      await rt.submit(ORG, `
name: hung
steps:
  - { id: b, to: "foreign:tools", timeout: 800ms, retries: 2, backoff: 10ms }
`);
      const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "hung", input: { ms: 3000 } });
      const task = await rt.finished(ORG, taskId);
      expect(task.status).toBe("failed");
      expect(task.error!.code).toBe("FOREIGN_NOT_RETRIED");
      expect(task.error!.message).toMatch(/gave no result/);
      expect(task.steps[0]).toMatchObject({ attempts: 1 });
      // Well past the deadline and any sweep pass: still one call.
      await new Promise((r) => setTimeout(r, 1_000));
      expect(server.callsOf("count")).toBe(1);
    });

    it("reports a server that is down as not sent (FOREIGN_SEND_FAILED) and opens the breaker after the threshold", async () => {
      const probe = createServer();
      await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
      const port = (probe.address() as AddressInfo).port;
      await new Promise((resolve) => probe.close(resolve));
      await registerTool("echo", {}, `http://127.0.0.1:${port}/mcp`);
      await rt.submit(ORG, `
name: one
steps:
  - { id: b, to: "foreign:tools" }
`);
      const first = await rt.tasks.start({ orgId: ORG, workflow: "one" });
      const firstTask = await rt.finished(ORG, first.taskId);
      expect(firstTask).toMatchObject({ status: "failed", error: { code: "FOREIGN_SEND_FAILED" } });
      expect(firstTask.error!.message).toContain("MCP_NETWORK");
      expect((await listBridges(rt.pool, ORG, first.taskId))[0]).toMatchObject({ status: "send_failed" });
      // The sender's retries (2) made the breaker's volume: the next hop is refused without a connection attempt.
      expect(rt.a2a!.breakers.state(ORG, "tools")).toBe("open");
      const second = await rt.tasks.start({ orgId: ORG, workflow: "one" });
      const secondTask = await rt.finished(ORG, second.taskId);
      expect(secondTask).toMatchObject({ status: "failed", error: { code: "FOREIGN_BREAKER_OPEN" } });
    });

    it("never calls the tool twice when the sender dies mid-call (not idempotent); the step times out", async () => {
      server = await startMcpServer();
      await registerTool("count");
      const crash = crashFirstSend();
      await rt.submit(ORG, CRASH);
      const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "crash", input: { ms: 500 } });
      await waitFor(async () => server!.callsOf("count") === 1, { what: "the tool call to start" });
      crash.cut();
      // Another process's sender finds nothing to send: the bridge left pending_send before the call was made.
      const other = createA2AForeign({ config: rt.config, pool: rt.pool, bridges: rt.stores.bridges, agents: rt.stores.foreignAgents, linkKeys: rt.stores.linkKeys, busAuth: rt.busAuth, publisher: rt.publisher });
      try {
        expect(await other.sender.run()).toBe(0);
        const task = await rt.finished(ORG, taskId);
        expect(task.status).toBe("failed");
        expect(task.error!.code).toBe("FOREIGN_NOT_RETRIED");
        expect(task.steps[0]).toMatchObject({ attempts: 1 });
        expect(await other.sender.run()).toBe(0);
      } finally {
        other.close();
      }
      // The sweep closes the timed-out hop's bridge; the "restarted" sender's late failure then changes nothing.
      const bridge = await waitFor(async () => {
        const [b] = await listBridges(rt.pool, ORG, taskId);
        return b?.status === "timed_out" ? b : undefined;
      }, { what: "the bridge to be closed" });
      expect(bridge.foreignTaskId).toBe(`mcp:${bridge.id}`);
      crash.release();
      await new Promise((r) => setTimeout(r, 300));
      expect(server.callsOf("count")).toBe(1);
      expect((await listBridges(rt.pool, ORG, taskId))[0]).toMatchObject({ status: "timed_out" });
    });

    it("re-sends after a mid-call death only to an agent registered idempotent", async () => {
      server = await startMcpServer();
      await registerTool("count", { idempotent: true });
      const crash = crashFirstSend();
      await rt.submit(ORG, CRASH);
      const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "crash", input: { ms: 500 } });
      await waitFor(async () => server!.callsOf("count") === 1, { what: "the tool call to start" });
      crash.cut();
      // The sender "restarts" once the step's timeout has re-dispatched the hop (attempt 2's bridge exists).
      await waitFor(async () => (await listBridges(rt.pool, ORG, taskId)).length === 2, { what: "the re-sent hop's bridge" });
      crash.release();
      const task = await rt.finished(ORG, taskId);
      expect(task.status).toBe("completed");
      expect(task.steps[0]).toMatchObject({ attempts: 2, output: "2" });
      expect(server.callsOf("count")).toBe(2);
    });
  });
});

describe("MCP results nested too deep", () => {
  let rt: ForeignTestRuntime | undefined;
  let server: RunningMcpServer | undefined;

  afterEach(async () => {
    await server?.close();
    await rt?.cleanup();
    rt = server = undefined;
  });

  it("a result nested 3,000 levels fails the hop closed (FOREIGN_OUTPUT_TOO_DEEP) and the task stays readable", async () => {
    rt = await createForeignRuntime();
    rt.startCoordinator();
    server = await startMcpServer();
    await rt.register("acme", { agentKey: "tools", baseUrl: server.url, protocol: "mcp", tool: "deep", skills: [] });
    await rt.submit("acme", `name: w\nsteps:\n  - { id: b, to: "foreign:tools", timeout: 5s }\n`);
    const { taskId } = await rt.tasks.start({ orgId: "acme", workflow: "w", input: { depth: 3_000 } });
    const task = await rt.finished("acme", taskId);
    expect(task.status).toBe("failed");
    expect(task.steps[0]).toMatchObject({ status: "failed", error: { code: "FOREIGN_OUTPUT_TOO_DEEP" } });
    const [bridge] = await listBridges(rt.pool, "acme", taskId);
    expect(bridge).toMatchObject({ status: "failed" });
    // Nothing of the deep answer was kept on the bridge either.
    expect(JSON.stringify(bridge!.artifacts).length).toBeLessThan(1_000);
  });
});

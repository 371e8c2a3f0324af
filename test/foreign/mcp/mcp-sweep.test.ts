/**
 * The reconciliation sweep and MCP bridges (delivery `call`): a call in flight is never "polled" however quiet it
 * is (there is no task to look up; its answer is the call's own), and a timed-out MCP hop's bridge is still closed
 * by the sweep, also once the send pool aborted its call. The sweep runs by hand here (its own interval is a minute), against a real MCP server on loopback.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startMcpServer, type RunningMcpServer } from "../../support/mcp-server.js";
import { waitForProgress } from "../../support/wait.js";
import { createForeignRuntime, type ForeignTestRuntime } from "../integration/support.js";

const ORG = "acme";

describe("the sweep and MCP bridges", () => {
  let rt: ForeignTestRuntime;
  let server: RunningMcpServer;
  beforeEach(async () => {
    // Quiet after 50 ms (the sweep would poll a pushed A2A bridge by then); the background sweep effectively never runs.
    rt = await createForeignRuntime({ sweepAfterMs: 50, sweepIntervalMs: 600_000 });
    rt.startCoordinator();
    server = await startMcpServer({ progress: false });
    await rt.register(ORG, { agentKey: "tools", baseUrl: server.url, protocol: "mcp", tool: "slow", skills: [] });
  });
  afterEach(async () => {
    await rt.cleanup();
    await server.close();
  });

  const bridgeOf = async (taskId: string) =>
    (await rt.pool.query<{ status: string; delivery: string | null; quiet: boolean }>(
      "SELECT status, delivery, updated_at < now() - interval '200 milliseconds' AS quiet FROM a2a_bridge WHERE task_id = $1",
      [taskId],
    )).rows[0];

  it("does not poll a quiet MCP call in flight; the call's own answer resolves it", async () => {
    await rt.submit(ORG, `
name: slow
steps:
  - { id: b, to: "foreign:tools", timeout: 20s }
`);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "slow", input: { ms: 4_000 } });
    // Moves from no bridge to pending_send to dispatched (the call started), then quiet: a stall (nothing changes
    // for 10 s) fails. A quiet `pending_send` row (a slow sender under load) is not what is asked for.
    await waitForProgress({
      what: "a quiet MCP bridge in flight",
      progress: () => bridgeOf(taskId),
      done: (b) => b?.status !== "pending_send" && b?.quiet === true,
      stallMs: 10_000,
    });
    expect(await bridgeOf(taskId)).toMatchObject({ status: "dispatched", delivery: "call" });
    const report = await rt.a2a!.sweep.run();
    expect(report).toEqual({ timedOut: 0, polled: 0, resumed: 0 });
    const task = await rt.finished(ORG, taskId);
    expect(task.status).toBe("completed");
    expect(task.steps[0]!.output).toBe("slept 4000");
    expect(server.callsOf("slow")).toBe(1);
  });

  it("still closes a timed-out MCP hop's bridge (timed_out), polling nothing", async () => {
    await rt.submit(ORG, `
name: late
steps:
  - { id: b, to: "foreign:tools", timeout: 1s }
`);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "late", input: { ms: 8_000 } });
    const task = await rt.finished(ORG, taskId);
    expect(task).toMatchObject({ status: "failed" });
    const report = await rt.a2a!.sweep.run();
    expect(report.polled).toBe(0);
    expect(await bridgeOf(taskId)).toMatchObject({ status: "timed_out", delivery: "call" });
    expect(server.callsOf("slow")).toBe(1);
  });

  it("leaves the bridge of a call aborted because its attempt timed out to the sweep, which closes it timed_out", async () => {
    await rt.submit(ORG, `
name: aborted
steps:
  - { id: b, to: "foreign:tools", timeout: 1s }
`);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "aborted", input: { ms: 30_000 } });
    expect(await rt.finished(ORG, taskId)).toMatchObject({ status: "failed" });
    // The send pool's liveness check (every second) aborts the call once the attempt is over: the tool sees it go.
    await waitForProgress({
      what: "the timed-out MCP call aborted",
      progress: () => ({ running: server.slowRunning, aborted: server.slowAborted }),
      done: (p) => p.aborted === 1 && p.running === 0,
      stallMs: 10_000,
    });
    // The abort is not the agent failing the task: the bridge stays for the sweep, as any hop that moved on.
    expect(await bridgeOf(taskId)).toMatchObject({ status: "dispatched", delivery: "call" });
    expect(await rt.a2a!.sweep.run()).toMatchObject({ timedOut: 1, polled: 0 });
    expect(await bridgeOf(taskId)).toMatchObject({ status: "timed_out", delivery: "call" });
  });
});

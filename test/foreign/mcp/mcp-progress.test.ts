/**
 * MCP progress extends the step's deadline (issue 10 §2), end to end against a REAL MCP server on loopback: each
 * progress notification of a running tool call becomes a gateway-signed heartbeat for the step attempt (throttled to
 * one a second), which moves the step's due time to now + its timeout, as a worker's heartbeat does; the transport's
 * own hard bound follows. A tool that keeps reporting outlives its step timeout several times over; one that never
 * reports times out at the original due time; one that stops reporting times out one step-timeout after.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { decodeEnvelope } from "../../../src/bus/codec.js";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import { listAudit } from "../../../src/store/audit/postgres-audit-store.js";
import type { TransportSendRequest } from "../../../src/foreign/transport.js";
import type { OutboxRow } from "../../../src/store/engine/engine-store.js";
import { startMcpServer, type RunningMcpServer } from "../../support/mcp-server.js";
import { waitFor } from "../../support/runtime.js";
import { waitForProgress } from "../../support/wait.js";
import { createForeignRuntime, type ForeignTestRuntime } from "../integration/support.js";

const ORG = "acme";

describe("MCP progress extends the step's deadline", () => {
  let rt: ForeignTestRuntime;
  let server: RunningMcpServer | undefined;
  /** The heartbeats the sender published (id, created at, attempt), in order. */
  let heartbeats: Array<{ id: string; atMs: number; stepId: string; attempt: number }>;
  /** When each progress notification reached the sender. */
  let progressAt: number[];
  let sampling: { stop(): Promise<number[]> } | undefined;

  beforeEach(async () => {
    rt = await createForeignRuntime();
    rt.startCoordinator();
    heartbeats = [];
    progressAt = [];
    const publish = rt.publisher.publish.bind(rt.publisher);
    rt.publisher.publish = async (rows: readonly OutboxRow[]) => {
      for (const row of rows) {
        const e = decodeEnvelope(row.bytes, rt.config.bus.maxPayloadBytes);
        if (/^mcp:.*:hb:\d+$/.test(e.id)) heartbeats.push({ id: e.id, atMs: Number(e.createdAtMs), stepId: e.stepId, attempt: e.attempt });
      }
      return publish(rows);
    };
    const transport = rt.a2a!.transports.for({ protocol: "mcp" });
    const send = transport.send.bind(transport);
    transport.send = (request: TransportSendRequest) =>
      send({
        ...request,
        progress: () => {
          progressAt.push(Date.now());
          request.progress?.();
        },
      });
  });

  afterEach(async () => {
    await sampling?.stop();
    sampling = undefined;
    await server?.close();
    server = undefined;
    await rt.cleanup();
  });

  /** Reads the step's due time every 50 ms until stopped; answers every distinct value seen, in order. */
  function sampleDueTimes(taskId: string): { stop(): Promise<number[]> } {
    const seen: number[] = [];
    let running = true;
    const loop = (async () => {
      while (running) {
        const { rows } = await rt.pool.query<{ due: string | null }>("SELECT due_at_ms::text AS due FROM steps WHERE task_id = $1", [taskId]);
        const due = rows[0]?.due;
        if (due != null && Number(due) !== seen.at(-1)) seen.push(Number(due));
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const stop = async () => {
      running = false;
      await loop;
      return seen;
    };
    sampling = { stop };
    return { stop };
  }

  async function run(yaml: string, input: unknown) {
    await rt.register(ORG, { agentKey: "tools", baseUrl: server!.url, protocol: "mcp", tool: "slow", skills: [] });
    await rt.submit(ORG, yaml);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "w", input });
    const dueTimes = sampleDueTimes(taskId);
    const task = await rt.finished(ORG, taskId, 15_000);
    const due = await dueTimes.stop();
    const audit = await listAudit(rt.pool, ORG, { taskId });
    return { taskId, task, due, audit };
  }

  it("a tool that runs 3× the step's timeout while reporting progress completes: no timeout, the due time moved on", async () => {
    server = await startMcpServer({ progressEveryMs: 300 });
    const started = Date.now();
    const { taskId, task, due, audit } = await run(`
name: w
steps:
  - { id: b, to: "foreign:tools", timeout: 1s }
`, { ms: 3_000 });
    expect(task.status).toBe("completed");
    expect(task.steps[0]).toMatchObject({ attempts: 1, output: "slept 3000" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
    expect(audit.map((a) => `${a.action}:${a.stepId}:${a.verdict}:${a.actor}`)).toEqual(["a2a_egress:b:allow:coordinator", "result:b:accepted:foreign:tools"]);
    expect(server.callsOf("slow")).toBe(1);
    // The due time moved on several times, by ~2 s in all, past the original (dispatch + 1 s).
    expect(due.length).toBeGreaterThanOrEqual(3);
    expect(due.at(-1)! - due[0]!).toBeGreaterThan(1_500);
    // Throttled: ~10 progress notifications, heartbeats at least half the step's timeout apart (a 1 s timeout: a
    // heartbeat a second could let the due time pass between two), all for this step's attempt 1.
    expect(progressAt.length).toBeGreaterThanOrEqual(7);
    expect(heartbeats.length).toBeGreaterThanOrEqual(3);
    expect(heartbeats.length).toBeLessThanOrEqual(7);
    for (let i = 1; i < heartbeats.length; i++) expect(heartbeats[i]!.atMs - heartbeats[i - 1]!.atMs).toBeGreaterThanOrEqual(500);
    const [bridge] = await listBridges(rt.pool, ORG, taskId);
    expect(heartbeats.map((h) => h.id)).toEqual(heartbeats.map((_, i) => `mcp:${bridge!.id}:hb:${i + 1}`));
    expect(heartbeats.every((h) => h.stepId === "b" && h.attempt === 1)).toBe(true);
    // No heartbeat once the call had ended.
    expect(heartbeats.every((h) => h.atMs <= audit[1]!.atMs)).toBe(true);
    // The bridge's deadline followed the last heartbeat.
    expect(Number(bridge!.deadlineMs)).toBeGreaterThanOrEqual(heartbeats.at(-1)!.atMs + 1_000);
  }, 30_000);

  it("the same tool without progress times out at the original due time; the due time never moved", async () => {
    server = await startMcpServer({ progress: false });
    const { task, due, audit } = await run(`
name: w
steps:
  - { id: b, to: "foreign:tools", timeout: 1s }
`, { ms: 3_000 });
    expect(task.status).toBe("failed");
    expect(task.error).toMatchObject({ code: "TIMEOUT", stepId: "b" });
    expect(audit.map((a) => `${a.action}:${a.verdict}`)).toEqual(["a2a_egress:allow", "timeout:failed"]);
    expect(due).toHaveLength(1);
    const [egress, timeout] = audit;
    // Timed out one step-timeout after the hop (the coordinator sweeps every 100 ms), long before the tool was done.
    expect(timeout!.atMs - egress!.atMs).toBeGreaterThanOrEqual(950);
    expect(timeout!.atMs - egress!.atMs).toBeLessThan(2_500);
    expect(heartbeats).toEqual([]);
    expect(server.callsOf("slow")).toBe(1);
  }, 30_000);

  it("a tool that reports progress for a while, then goes silent, times out one step-timeout after its last sign of life", async () => {
    server = await startMcpServer({ progressEveryMs: 300, progressForMs: 3_000 });
    const { task, due, audit } = await run(`
name: w
steps:
  - { id: b, to: "foreign:tools", timeout: 2s }
`, { ms: 12_000 });
    expect(task.status).toBe("failed");
    expect(task.error).toMatchObject({ code: "TIMEOUT", stepId: "b" });
    const [egress, timeout] = audit;
    expect(audit.map((a) => `${a.action}:${a.verdict}`)).toEqual(["a2a_egress:allow", "timeout:failed"]);
    const lastProgress = progressAt.at(-1)!;
    const lastHeartbeat = heartbeats.at(-1)!.atMs;
    expect(lastProgress - progressAt[0]!).toBeGreaterThan(2_000);
    // Well past the original due time (hop + 2 s), and long before the tool would have answered (hop + 12 s).
    expect(timeout!.atMs - egress!.atMs).toBeGreaterThan(3_500);
    expect(timeout!.atMs - egress!.atMs).toBeLessThan(9_000);
    // The due time is one step-timeout after the last heartbeat the coordinator applied (at most 1 s, the
    // throttle, before the last progress); the sweep finds it within its interval (loose for a loaded machine).
    expect(timeout!.atMs).toBeGreaterThanOrEqual(lastHeartbeat + 2_000);
    expect(timeout!.atMs).toBeLessThan(lastProgress + 2_000 + 2_500);
    expect(lastProgress - lastHeartbeat).toBeLessThan(1_000 + 300);
    // A 2 s step timeout: at most one heartbeat a second.
    for (let i = 1; i < heartbeats.length; i++) expect(heartbeats[i]!.atMs - heartbeats[i - 1]!.atMs).toBeGreaterThanOrEqual(1_000);
    expect(heartbeats.length).toBeLessThanOrEqual(4);
    expect(due.length).toBeGreaterThanOrEqual(2);
    expect(server.callsOf("slow")).toBe(1);
  }, 40_000);
});

describe("a foreign call's hard ceiling", () => {
  let rt: ForeignTestRuntime | undefined;
  let server: RunningMcpServer | undefined;

  afterEach(async () => {
    await server?.close();
    await rt?.cleanup();
    rt = server = undefined;
  });

  it("progress cannot move it: a tool reporting progress for ever is aborted 3 step timeouts after it started", async () => {
    rt = await createForeignRuntime({ callCeilingFactor: 3 });
    rt.startCoordinator();
    server = await startMcpServer({ slowMs: 60_000, progressEveryMs: 200 });
    await rt.register(ORG, { agentKey: "tools", baseUrl: server.url, protocol: "mcp", tool: "slow", skills: [] });
    await rt.submit(ORG, `
name: w
steps:
  - { id: b, to: "foreign:tools", timeout: 1s }
`);
    const started = Date.now();
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "w", input: {} });
    const task = await rt.finished(ORG, taskId, 15_000);
    const took = Date.now() - started;
    expect(task.status).toBe("failed");
    expect(task.steps[0]!.error?.message).toMatch(/ceiling/);
    // Kept alive by progress past its 1 s timeout, then stopped at 3 s, not at the tool's 60 s.
    expect(took).toBeGreaterThanOrEqual(3_000);
    expect(took).toBeLessThan(20_000);
    await waitForProgress({ what: "the tool's call to be aborted", progress: async () => server!.slowRunning, done: (running) => running === 0 });
    expect(server.slowAborted).toBe(1);
  }, 60_000);
});

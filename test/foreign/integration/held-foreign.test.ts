/**
 * Dispatch limits on a FOREIGN destination (issue 15: "the same limits apply per (tenant, foreign agent), on top of
 * the breaker"). A max in flight of 2 on (tenant, foreign:helper) is never exceeded, counted at a real A2A agent on
 * loopback and replayed from the tenant's audit chain; a held step made no hop (no audit row, no bridge, nothing at
 * the agent) until it is released; held steps released to an agent that is down fail and retry as unheld ones do.
 */
import { createServer, type AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { setLimit } from "../../../src/fairness/limit-changes.js";
import { createPostgresLimitStore } from "../../../src/store/limits/postgres-limit-store.js";
import type { DispatchLimit } from "../../../src/core/limits.js";
import { listAudit } from "../../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../../src/governance/audit-verify.js";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import type { Coordinator } from "../../../src/coordinator/coordinator.js";
import { createRuntime, type Runtime } from "../../../src/runtime.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { waitForProgress, waitForTasks } from "../../support/wait.js";
import { coordinatorOf, createForeignRuntime, type ForeignTestRuntime } from "./support.js";

const ORG = "acme";
const CONTROL = "globex";
const workflow = (retries: number) => `
name: ask
steps:
  - { id: b, to: "foreign:helper", timeout: 30s, retries: ${retries}, backoff: 10ms }
`;

const limit = (l: Partial<DispatchLimit>): DispatchLimit => ({ orgId: "", destination: "", maxInFlight: null, ratePerSec: null, burst: null, weight: null, ...l });

/**
 * Tasks open at the agent, from the message it received to the push of its final status (serialised before it is
 * sent, so before we can know the task ended): the peak is what the agent saw at once.
 */
function countOpen(agent: RunningA2AAgent): { peak: () => number } {
  let open = 0;
  let peak = 0;
  const ended = new Set<string>();
  const received = agent.received as RunningA2AAgent["received"][number][];
  const pushes = agent.pushes as RunningA2AAgent["pushes"][number][];
  received.push = (...items) => {
    open += items.length;
    peak = Math.max(peak, open);
    return Array.prototype.push.apply(received, items);
  };
  pushes.push = (...items) => {
    for (const p of items) {
      if (!ended.has(p.taskId) && JSON.stringify(p.body).includes("TASK_STATE_COMPLETED")) {
        ended.add(p.taskId);
        open -= 1;
      }
    }
    return Array.prototype.push.apply(pushes, items);
  };
  return { peak: () => peak };
}

const taskOf = (r: RunningA2AAgent["received"][number]) => (r.metadata as { switchyard?: { taskId?: string } } | undefined)?.switchyard?.taskId;

/** A loopback port where nothing listens: every request to it is refused before anything is written. */
async function deadPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

describe("dispatch limits on a FOREIGN destination", () => {
  let rt: ForeignTestRuntime | undefined;
  let helper: RunningA2AAgent | undefined;
  let second: Runtime | undefined;
  let secondCoordinator: Coordinator | undefined;

  afterEach(async () => {
    await secondCoordinator?.close();
    await second?.close();
    await helper?.close();
    helper = undefined;
    await rt?.cleanup();
    rt = second = secondCoordinator = undefined;
  });

  async function setUp(maxInFlight: number, retries: number, tenants: string[]): Promise<ForeignTestRuntime> {
    rt = await createForeignRuntime();
    for (const tenant of tenants) await rt.submit(tenant, workflow(retries));
    await setLimit(createPostgresLimitStore(), rt.pool, limit({ orgId: ORG, destination: "foreign:helper", maxInFlight }), { actor: "test", reason: "foreign limits test" });
    await rt.limits.refresh();
    return rt;
  }

  const start = async (r: ForeignTestRuntime, orgId: string, count: number) =>
    (await r.tasks.startMany(orgId, Array.from({ length: count }, () => ({ orgId, workflow: "ask", input: { n: 1 } })))).map((t) => t.taskId);

  /** What the held steps' tasks show of a hop: audit rows, bridges, messages at the agent. */
  async function traces(r: ForeignTestRuntime, taskIds: readonly string[]): Promise<Map<string, { audit: string[]; bridges: number; received: number }>> {
    const out = new Map<string, { audit: string[]; bridges: number; received: number }>();
    for (const taskId of taskIds) {
      const audit = (await listAudit(r.pool, ORG, { taskId })).map((a) => `${a.action}:${a.verdict}`);
      const bridges = (await listBridges(r.pool, ORG, taskId)).length;
      out.set(taskId, { audit, bridges, received: helper?.received.filter((m) => taskOf(m) === taskId).length ?? 0 });
    }
    return out;
  }

  const heldNow = async (r: ForeignTestRuntime, taskIds: readonly string[]) =>
    (await Promise.all(taskIds.map(async (id) => ((await r.tasks.get(ORG, id)).steps[0]!.status === "held" ? id : undefined)))).filter((id) => id !== undefined);

  it("max 2 in flight on (tenant, foreign agent): never exceeded at the agent or in the audit chain; a held step made no hop", async () => {
    const r = await setUp(2, 0, [ORG]);
    // ~150 ms a task: submitted, then working, artifact and completed 50 ms apart.
    helper = await startA2AAgent({ dialect: "1.0", behaviour: "complete", pushDelays: 50 });
    const open = countOpen(helper);
    await r.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl });

    // Started before any coordinator runs: two hops are admitted (governed, audited, a bridge each), six are held.
    const ids = await start(r, ORG, 8);
    const admitted = ids.slice(0, 2);
    const held = ids.slice(2);
    const first = await r.tasks.get(ORG, held[0]!);
    expect(first.status).toBe("running");
    expect(first.steps[0]).toMatchObject({ status: "held", queuedReason: "queued behind tenant limit (2/2 in flight on foreign:helper)" });
    expect((await r.tasks.get(ORG, held[5]!)).steps[0]).toMatchObject({ status: "held", queuedReason: "queued behind 5 earlier held step(s) of this tenant on foreign:helper" });
    for (const [taskId, t] of await traces(r, admitted)) expect(t, taskId).toEqual({ audit: ["a2a_egress:allow"], bridges: 1, received: 0 });
    for (const [taskId, t] of await traces(r, held)) expect(t, taskId).toEqual({ audit: [], bridges: 0, received: 0 });

    // With two coordinator processes (each its own runtime: sender, poller, sweep, release loop) on one database and
    // bus: once the agent has the first two, a step still held after what it left behind was read had made no hop
    // when it was read (a step leaves `held` only by its release).
    second = await createRuntime(r.config);
    secondCoordinator = coordinatorOf(second, "second");
    void secondCoordinator.start();
    r.startCoordinator();
    await waitForProgress({ what: "the agent to receive the admitted two", progress: () => helper!.received.length, done: (n) => n >= 2 });
    const before = await traces(r, held);
    const stillHeld = await heldNow(r, held);
    expect(stillHeld.length).toBeGreaterThanOrEqual(4);
    for (const taskId of stillHeld) expect(before.get(taskId), taskId).toEqual({ audit: [], bridges: 0, received: 0 });

    const state = await waitForTasks(r.pool, { orgId: ORG });
    expect(state.tasks).toEqual({ completed: 8 });
    expect(open.peak()).toBe(2);

    // Replayed from the chain: hops allowed vs results, in chain order.
    const { rows } = await r.pool.query<{ action: string; verdict: string; task_id: string }>(
      `SELECT action, verdict, task_id FROM audit_log
       WHERE org_id = $1 AND ((action = 'a2a_egress' AND verdict = 'allow') OR action IN ('result', 'timeout')) ORDER BY seq`,
      [ORG],
    );
    let inFlight = 0;
    let peak = 0;
    for (const row of rows) {
      inFlight += row.action === "a2a_egress" ? 1 : -1;
      peak = Math.max(peak, inFlight);
    }
    expect(peak).toBe(2);
    expect(inFlight).toBe(0);
    // Each step went exactly once: one hop, one bridge, one message at the agent, attempt 1.
    for (const [taskId, t] of await traces(r, ids)) expect(t, taskId).toEqual({ audit: ["a2a_egress:allow", "result:accepted"], bridges: 1, received: 1 });
    for (const id of ids) expect((await r.tasks.get(ORG, id)).steps[0]).toMatchObject({ status: "completed", attempts: 1 });
    const { rows: left } = await r.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM held_steps");
    expect(left[0]!.n).toBe(0);
    expect((await verifyChain(r.stores.audit, r.pool, ORG)).ok).toBe(true);
  });

  it("held steps released to an agent that is down fail and retry as an unheld step does, under the breaker", async () => {
    const r = await setUp(1, 1, [ORG, CONTROL]);
    const port = await deadPort();
    await r.register(ORG, { agentKey: "helper", baseUrl: `http://127.0.0.1:${port}` });
    await r.register(CONTROL, { agentKey: "helper", baseUrl: `http://127.0.0.1:${port}` });
    const ids = await start(r, ORG, 4);
    expect((await r.tasks.get(ORG, ids[1]!)).steps[0]).toMatchObject({ status: "held", queuedReason: "queued behind tenant limit (1/1 in flight on foreign:helper)" });
    const [control] = await start(r, CONTROL, 1);
    r.startCoordinator();
    await waitForTasks(r.pool);

    // The unlimited tenant's step, never held, is the yardstick: the send fails before a request left, so the
    // step's retry re-sends it; both attempts fail closed, audited.
    const shape = async (orgId: string, taskId: string) => {
      const task = await r.tasks.get(orgId, taskId);
      const audit = (await listAudit(r.pool, orgId, { taskId })).map((a) => `${a.action}:${a.verdict}`);
      const bridges = (await listBridges(r.pool, orgId, taskId)).map((b) => [b.attempt, b.status]);
      return { status: task.status, attempts: task.steps[0]!.attempts, audit, bridges };
    };
    const expected = {
      status: "failed",
      attempts: 2,
      audit: ["a2a_egress:allow", "result:failed", "a2a_egress:allow", "result:failed"],
      bridges: [[1, "send_failed"], [2, "send_failed"]],
    };
    expect(await shape(CONTROL, control!)).toEqual(expected);
    const codes = new Set<string>();
    for (const id of ids) {
      expect(await shape(ORG, id), id).toEqual(expected);
      codes.add((await r.tasks.get(ORG, id)).error!.code);
    }
    // The agent's breaker (per tenant) opened on the failed sends, and the steps released after it failed fast.
    expect(r.a2a!.breakers.state(ORG, "helper")).toBe("open");
    expect(codes).toContain("FOREIGN_BREAKER_OPEN");
    for (const code of codes) expect(["FOREIGN_SEND_FAILED", "FOREIGN_BREAKER_OPEN"]).toContain(code);
    // Never more than one of the tenant's hops in flight, failed ones included.
    const { rows } = await r.pool.query<{ action: string }>(
      `SELECT action FROM audit_log WHERE org_id = $1 AND ((action = 'a2a_egress' AND verdict = 'allow') OR action IN ('result', 'timeout')) ORDER BY seq`,
      [ORG],
    );
    let inFlight = 0;
    for (const row of rows) {
      inFlight += row.action === "a2a_egress" ? 1 : -1;
      expect(inFlight).toBeLessThanOrEqual(1);
    }
    const { rows: left } = await r.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM held_steps");
    expect(left[0]!.n).toBe(0);
  });
});

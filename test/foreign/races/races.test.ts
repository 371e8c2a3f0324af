/**
 * Exactly-once and no-stranding in the foreign path, each race staged deterministically with real agents, Postgres
 * and Redis: the transport is wrapped only to inject the crash or failure at the exact point of the race, and the
 * push is applied through applyObservation (what the callback intake does) at that point.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { GATEWAY_SENDER } from "../../../src/bus/auth/bus-keys.js";
import { listAudit } from "../../../src/store/audit/postgres-audit-store.js";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import { applyObservation } from "../../../src/foreign/resume.js";
import { ForeignSender } from "../../../src/foreign/sender.js";
import { ForeignPoller, PER_AGENT_CLAIM } from "../../../src/foreign/poller.js";
import { BreakerRegistry } from "../../../src/foreign/egress/index.js";
import { ForeignTransports, type ForeignTransport } from "../../../src/foreign/transport.js";
import { startA2AAgent, type AgentBehaviour, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { waitFor } from "../../support/runtime.js";
import { createForeignRuntime, postPush, type ForeignTestRuntime } from "../integration/support.js";

const ORG = "acme";
const workflow = (timeout: string) => `
name: one
steps:
  - { id: b, to: "foreign:helper", timeout: ${timeout} }
`;
const completedPush = (id: string) => ({ statusUpdate: { taskId: id, contextId: "ctx", status: { state: "TASK_STATE_COMPLETED" } } });

describe("foreign races", () => {
  let rt: ForeignTestRuntime | undefined;
  let agent: RunningA2AAgent | undefined;
  let proxy: Server | undefined;

  afterEach(async () => {
    proxy?.closeAllConnections();
    await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
    proxy = undefined;
    await agent?.close();
    agent = undefined;
    await rt?.cleanup();
    rt = undefined;
  });

  async function setUp(behaviour: AgentBehaviour, timeout = "8s", foreign: Parameters<typeof createForeignRuntime>[0] = {}) {
    rt = await createForeignRuntime(foreign);
    agent = await startA2AAgent({ dialect: "1.0", behaviour, name: "helper" });
    await rt.register(ORG, { agentKey: "helper", baseUrl: agent.baseUrl });
    await rt.submit(ORG, workflow(timeout));
    return rt;
  }

  /** A sender whose transport runs the real send, then `after` (the race), instead of returning normally. */
  function senderWith(r: ForeignTestRuntime, after: (sent: Awaited<ReturnType<ForeignTransport["send"]>>, bridgeId: string) => Promise<never>) {
    const real = r.a2a!.transports;
    const transports = {
      for(a: Parameters<ForeignTransports["for"]>[0]): ForeignTransport {
        const t = real.for(a);
        return Object.assign(Object.create(t) as ForeignTransport, {
          send: async (request: Parameters<ForeignTransport["send"]>[0]) => after(await t.send(request), request.bridge.id),
        });
      },
    } as ForeignTransports;
    return new ForeignSender({
      pool: r.pool,
      bridges: r.stores.bridges,
      agents: r.stores.foreignAgents,
      linkKeys: r.stores.linkKeys,
      maxPayloadBytes: r.config.bus.maxPayloadBytes,
      signer: r.busAuth.signer(GATEWAY_SENDER),
      transports,
      breakers: r.a2a!.breakers,
      foreign: r.config.foreign,
      publicUrl: r.publicUrl,
    });
  }

  const resumeDeps = (r: ForeignTestRuntime) => ({ pool: r.pool, bridges: r.stores.bridges, agents: r.stores.foreignAgents, signer: r.busAuth.signer(GATEWAY_SENDER), maxPayloadBytes: r.config.bus.maxPayloadBytes });

  it("(1A) a completed push before the send is recorded, then the sender dies: the poller still resolves it from GetTask", async () => {
    const r = await setUp("no-push", "6s");
    const { taskId } = await r.tasks.start({ orgId: ORG, workflow: "one", input: { q: 1 } });
    let pushed!: () => void;
    const pushedNow = new Promise<void>((resolve) => (pushed = resolve));
    // The agent has the task; its `completed` push lands; then this sender never returns (a crash before recordSent).
    void senderWith(r, async (sent, bridgeId) => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await applyObservation(resumeDeps(r), bridgeId, { foreignTaskId: sent.foreignTaskId, state: "completed", artifacts: [] });
      pushed();
      return new Promise<never>(() => {});
    }).run();
    await pushedNow;
    const [bridge] = await listBridges(r.pool, ORG, taskId);
    expect(bridge).toMatchObject({ status: "dispatched", lastState: "completed" });
    // The coordinator's own sender, poller and sweep take over (its sender must not send again).
    r.startCoordinator();
    const task = await r.finished(ORG, taskId);
    expect(task).toMatchObject({ status: "completed", steps: [{ output: { echo: { task: { q: 1 }, steps: {} }, by: "helper" } }] });
    expect(agent!.received).toHaveLength(1);
    expect(agent!.calls.filter((c) => c.startsWith("getTask:"))).not.toHaveLength(0);
  });

  it("(1B) a completed push, then the send's answer fails: handed to the poller, not failed", async () => {
    const r = await setUp("no-push", "6s");
    const { taskId } = await r.tasks.start({ orgId: ORG, workflow: "one", input: { q: 2 } });
    await senderWith(r, async (sent, bridgeId) => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await applyObservation(resumeDeps(r), bridgeId, { foreignTaskId: sent.foreignTaskId, state: "completed", artifacts: [] });
      throw Object.assign(new Error("the answer timed out"), {});
    }).run();
    const [bridge] = await listBridges(r.pool, ORG, taskId);
    expect(bridge!.status).toBe("dispatched");
    expect(bridge!.nextPollAt).not.toBeNull();
    r.startCoordinator();
    const task = await r.finished(ORG, taskId);
    expect(task).toMatchObject({ status: "completed", steps: [{ output: { echo: { task: { q: 2 }, steps: {} }, by: "helper" } }] });
    expect(agent!.received).toHaveLength(1);
  });

  it("(1C) the sweep closes a pending_send bridge that has a foreign task when its step moved on", async () => {
    const r = await setUp("never-finish", "1500ms");
    const { taskId } = await r.tasks.start({ orgId: ORG, workflow: "one" });
    const [bridge] = await listBridges(r.pool, ORG, taskId);
    // A push named the task before the send (a row of the old shape: still pending_send); nothing sends it.
    await r.pool.query("UPDATE a2a_bridge SET foreign_task_id = 'ft-stale', claimed_until = now() + interval '1 hour' WHERE id = $1", [bridge!.id]);
    r.startCoordinator();
    const task = await r.finished(ORG, taskId);
    expect(task.status).toBe("failed");
    const closed = await waitFor(async () => {
      const [b] = await listBridges(r.pool, ORG, taskId);
      return b?.status === "timed_out" ? b : undefined;
    }, { what: "the sweep closing the bridge" });
    expect(closed.resolvedAt).not.toBeNull();
  });

  it("(3) a confirmation that cannot be answered, with nothing collected, never resolves as an empty success", async () => {
    const r = await setUp("no-push", "3s");
    r.startCoordinator();
    const { taskId } = await r.tasks.start({ orgId: ORG, workflow: "one", input: { q: 3 } });
    await waitFor(async () => ((await listBridges(r.pool, ORG, taskId))[0]?.status === "dispatched" ? true : undefined));
    const received = agent!.received[0]!;
    await agent!.close();
    agent = undefined;
    expect((await postPush(received.pushConfig!.url, completedPush(received.taskId), { "x-a2a-notification-token": received.pushConfig!.token! })).status).toBe(200);
    const task = await r.finished(ORG, taskId);
    expect(task.status).toBe("failed");
    expect(task.steps[0]!.error?.code).toBe("TIMEOUT");
    // The sweep closes the bridge on its next pass after the step timed out (never as a success meanwhile).
    const bridge = await waitFor(async () => {
      const [b] = await listBridges(r.pool, ORG, taskId);
      expect(b!.status === "completed").toBe(false);
      return b?.status === "timed_out" ? b : undefined;
    }, { what: "the sweep closing the timed-out bridge" });
    expect(bridge.polls).toBeGreaterThanOrEqual(3);
    // No cancel for a task that had already ended.
    expect((await listAudit(r.pool, ORG, { taskId })).filter((a) => a.action === "foreign_cancel")).toHaveLength(0);
  });

  it("(3) a poll the open breaker refused is no confirmation try, and never resolves an empty success", async () => {
    const r = await setUp("no-push", "30s");
    const { taskId } = await r.tasks.start({ orgId: ORG, workflow: "one" });
    const [bridge] = await listBridges(r.pool, ORG, taskId);
    // Staged: the agent said `completed` (no artifact collected) and a GetTask is due.
    await r.pool.query(
      "UPDATE a2a_bridge SET status = 'dispatched', foreign_task_id = 'ft-1', last_state = 'completed', delivery = 'push', next_poll_at = now(), polls = 0 WHERE id = $1",
      [bridge!.id],
    );
    const breakers = new BreakerRegistry({ volumeThreshold: 1, resetTimeout: 60_000 });
    await breakers.run(ORG, "helper", () => Promise.reject(new Error("down"))).catch(() => {});
    expect(breakers.state(ORG, "helper")).toBe("open");
    const poller = new ForeignPoller({ ...resumeDeps(r), transports: r.a2a!.transports, breakers, foreign: r.config.foreign });
    for (let i = 0; i < 5; i++) {
      expect(await poller.run()).toBe(1);
      await r.pool.query("UPDATE a2a_bridge SET next_poll_at = now() WHERE id = $1 AND next_poll_at IS NOT NULL", [bridge!.id]);
    }
    const [after] = await listBridges(r.pool, ORG, taskId);
    expect(after).toMatchObject({ status: "dispatched", lastState: "completed", polls: 0 });
    expect(agent!.calls).toEqual([]);
    breakers.shutdown();
  });

  it("(8) one claim polls at most PER_AGENT_CLAIM due bridges of one (tenant, agent)", async () => {
    const r = await setUp("no-push", "30s");
    const starts = await Promise.all(Array.from({ length: PER_AGENT_CLAIM + 3 }, () => r.tasks.start({ orgId: ORG, workflow: "one" })));
    await r.pool.query(
      "UPDATE a2a_bridge SET status = 'dispatched', foreign_task_id = 'ft-' || id, last_state = 'working', delivery = 'poll', next_poll_at = now() WHERE task_id = ANY($1::uuid[])",
      [starts.map((s) => s.taskId)],
    );
    const poller = new ForeignPoller({ ...resumeDeps(r), transports: r.a2a!.transports, breakers: new BreakerRegistry(), foreign: r.config.foreign });
    expect(await poller.run()).toBe(PER_AGENT_CLAIM);
    const { rows } = await r.pool.query("SELECT count(*)::int AS n FROM a2a_bridge WHERE polls = 1");
    expect(rows[0].n).toBe(PER_AGENT_CLAIM);
  });

  it("(9) a cancelled task's CancelTask is audited with rule builtin:cancel", async () => {
    const r = await setUp("never-finish", "30s");
    r.startCoordinator();
    const { taskId } = await r.tasks.start({ orgId: ORG, workflow: "one" });
    await waitFor(async () => ((await listBridges(r.pool, ORG, taskId))[0]?.status === "working" ? true : undefined), { what: "the agent working" });
    await r.tasks.cancel(ORG, taskId, "user:test", "no longer needed");
    const row = await waitFor(async () => (await listAudit(r.pool, ORG, { taskId })).find((a) => a.action === "foreign_cancel"), { what: "the foreign_cancel row" });
    expect(row).toMatchObject({ verdict: "sent", rule: "builtin:cancel" });
    expect((await listBridges(r.pool, ORG, taskId))[0]).toMatchObject({ status: "timed_out" });
  });

  it("(2) a blocking agent slower than the call timeout is sent once and answers within the step's time", async () => {
    const r = await setUp("blocking-complete", "8s", { totalTimeoutMs: 600 });
    // Polled: no push can rescue a send that gave up, only the SendMessage answer (or a GetTask) tells the end.
    await r.pool.query("UPDATE foreign_agents SET delivery = 'poll' WHERE agent_key = 'helper'");
    // A proxy that holds SendMessage's answer for 1.5 s (the agent "works"), counting the sends it sees.
    let sends = 0;
    const target = agent!.baseUrl.replace(/\/+$/, "");
    proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        void (async () => {
          const body = Buffer.concat(chunks).toString("utf8");
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string" && k !== "host" && k !== "content-length") headers[k] = v;
          const upstream = await fetch(`${target}${req.url}`, { method: req.method, headers, ...(body ? { body } : {}) });
          let text = await upstream.text();
          if (/SendMessage|message\/send/.test(body)) {
            sends++;
            await new Promise((resolve) => setTimeout(resolve, 1_500));
          }
          text = text.split(target).join(proxyUrl);
          res.writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "application/json" }).end(text);
        })().catch(() => res.writeHead(502).end());
      });
    });
    await new Promise<void>((resolve) => proxy!.listen(0, "127.0.0.1", resolve));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    await r.pool.query("UPDATE foreign_agents SET base_url = $1, allow_host = $2 WHERE agent_key = 'helper'", [proxyUrl, new URL(proxyUrl).host]);
    r.startCoordinator();
    const { taskId } = await r.tasks.start({ orgId: ORG, workflow: "one", input: { q: 4 } });
    const task = await r.finished(ORG, taskId);
    expect(task).toMatchObject({ status: "completed", steps: [{ output: { echo: { task: { q: 4 }, steps: {} }, by: "helper" } }] });
    expect(sends).toBe(1);
  });

  it("(6) the answer is written with the send: a failed first write is retried, the Message answer is not lost", async () => {
    const r = await setUp("message-reply", "6s");
    // Fault injection in Postgres itself: the first RESULT of a foreign hop written to the outbox fails once.
    await r.pool.query("CREATE SEQUENCE races_fault");
    await r.pool.query(`CREATE FUNCTION races_fault() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.envelope_id LIKE 'a2a:%:final' AND nextval('races_fault') = 1 THEN RAISE EXCEPTION 'injected outbox failure'; END IF; RETURN NEW; END $$`);
    await r.pool.query("CREATE TRIGGER races_fault BEFORE INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION races_fault()");
    r.startCoordinator();
    const { taskId } = await r.tasks.start({ orgId: ORG, workflow: "one", input: { q: 6 } });
    const task = await r.finished(ORG, taskId);
    expect(task).toMatchObject({ status: "completed", steps: [{ output: { echo: { task: { q: 6 }, steps: {} }, by: "helper" } }] });
    const [bridge] = await listBridges(r.pool, ORG, taskId);
    // (7) the stand-in id of a Message answer is ours (the bridge id), never the agent's message id.
    expect(bridge).toMatchObject({ status: "completed", foreignTaskId: `message:${bridge!.id}` });
    expect(Number((await r.pool.query("SELECT last_value FROM races_fault")).rows[0].last_value)).toBe(2);
  });
});

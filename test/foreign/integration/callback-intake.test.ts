/**
 * The callback route's batched, optimistic path (callback-intake.ts) and where its RESULTs go: many concurrent
 * pushes, pushes that find their bridge changed since it was read, a push that claims another bridge's task inside a
 * batch, outputs over the payload cap, and a tenant whose coordinator is switched off.
 */
import { GATEWAY_SENDER } from "../../../src/bus/auth/bus-keys.js";
import { COORDINATOR_STREAM } from "../../../src/bus/bus.js";
import { streamKey } from "../../../src/bus/keys.js";
import { inboxOf } from "../../../src/bus/shards.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getLinkKey } from "../../../src/store/approvals/postgres-link-key-store.js";
import { setFlag } from "../../../src/flags/flag-changes.js";
import { createPostgresFlagStore } from "../../../src/store/flags/postgres-flag-store.js";
import { listAudit } from "../../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../../src/governance/audit-verify.js";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import { notificationSecret, signCallbackToken } from "../../../src/foreign/callback-token.js";
import { applyObservation } from "../../../src/foreign/resume.js";
import { ForeignSender } from "../../../src/foreign/sender.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { waitFor } from "../../support/runtime.js";
import { createForeignRuntime, postPush, type ForeignTestRuntime } from "./support.js";

const ORG = "acme";
// A generous timeout: on a loaded box opening 24 hops can outlast the runtime's 5 s default, and a timed-out hop
// answers its pushes as late instead of resumed — a slow machine, not a bug in the intake.
const ONE_STEP = `
name: one
steps:
  - { id: b, to: "foreign:helper", timeout: 120s }
`;

const completed = (id: string) => ({ statusUpdate: { taskId: id, contextId: "ctx", status: { state: "TASK_STATE_COMPLETED" } } });
const working = (id: string) => ({ statusUpdate: { taskId: id, contextId: "ctx", status: { state: "TASK_STATE_WORKING" } } });
/** A whole terminal Task push: resolves at once (a bare `completed` status push waits for a confirming GetTask). */
const completedTask = (id: string, value: unknown) => ({ task: { id, contextId: "ctx", status: { state: "TASK_STATE_COMPLETED" }, artifacts: [{ artifactId: "result", parts: [{ data: value }] }] } });
const artifact = (id: string, value: unknown, append = false) => ({ artifactUpdate: { taskId: id, contextId: "ctx", append, artifact: { artifactId: "result", parts: [{ data: value }] } } });

describe("A2A callback intake", () => {
  let rt: ForeignTestRuntime;
  let helper: RunningA2AAgent;

  afterEach(async () => {
    await helper?.close();
    await rt?.cleanup();
  });

  async function setUp(options: { maxPayloadBytes?: number; coordinator?: boolean } = {}) {
    rt = await createForeignRuntime({ callbackRatePerSec: 10_000 }, {}, options.maxPayloadBytes ? { maxPayloadBytes: options.maxPayloadBytes } : {});
    helper = await startA2AAgent({ dialect: "1.0", behaviour: "no-push" });
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl, costEstimate: 0.25 });
    await rt.submit(ORG, ONE_STEP);
    if (options.coordinator !== false) rt.startCoordinator();
  }

  /** Starts a task and waits until the agent has its message; the bridge is then `dispatched`. */
  async function opened() {
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "one" });
    const bridge = await waitFor(async () => {
      const [b] = await listBridges(rt.pool, ORG, taskId);
      return b?.status === "dispatched" ? b : undefined;
    });
    const received = helper.received.find((r) => (r.metadata as { switchyard?: { taskId?: string } })?.switchyard?.taskId === taskId)!;
    return { taskId, bridge, url: received.pushConfig!.url, header: { "x-a2a-notification-token": received.pushConfig!.token! }, foreignTaskId: received.taskId };
  }

  describe("with a coordinator", () => {
    beforeEach(() => setUp());

    it("resumes each of many concurrently pushed tasks exactly once, duplicates included", async () => {
      const hops = await Promise.all(Array.from({ length: 24 }, () => opened()));
      // Every task gets progress, an artifact and its final state three times, all at once and interleaved.
      const answers = await Promise.all(
        hops.flatMap((h, i) => [
          postPush(h.url, working(h.foreignTaskId), h.header),
          postPush(h.url, artifact(h.foreignTaskId, { n: i }), h.header),
          ...Array.from({ length: 3 }, () => postPush(h.url, completedTask(h.foreignTaskId, { n: i }), h.header)),
        ]),
      );
      expect(answers.every((a) => a.status === 200)).toBe(true);
      expect(answers.filter((a) => a.text.includes("resumed"))).toHaveLength(hops.length);
      // Every push went through a batch (count of batches ≤ pushes, sum of sizes = pushes).
      const sizes = (await rt.metrics.a2aCallbackBatchSize.get()).values;
      const sum = sizes.find((v) => v.metricName?.endsWith("_sum"))?.value;
      const count = sizes.find((v) => v.metricName?.endsWith("_count"))?.value ?? 0;
      expect(sum).toBe(answers.length);
      expect(count).toBeGreaterThan(0);
      expect(count).toBeLessThanOrEqual(answers.length);
      for (const h of hops) {
        const done = await rt.finished(ORG, h.taskId);
        expect(done.status).toBe("completed");
        const audit = await listAudit(rt.pool, ORG, { taskId: h.taskId });
        expect(audit.map((r) => `${r.action}:${r.verdict}:${r.actor}`)).toEqual(["a2a_egress:allow:coordinator", "result:accepted:foreign:helper"]);
        expect(audit[1]!.cost).toBe(0.25);
      }
      expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
      const { rows } = await rt.pool.query("SELECT count(*)::int AS n FROM outbox");
      expect(rows[0].n).toBe(0);
      // Each RESULT went straight to the tenant's shard inbox, none through the shared one (one hop fewer).
      expect(await rt.redis.xlen(streamKey(rt.prefix, inboxOf(ORG, rt.config.shards.count)))).toBe(hops.length);
      expect(await rt.redis.xlen(streamKey(rt.prefix, COORDINATOR_STREAM))).toBe(0);
    });

    it("applies a push whose bridge changed since it was read through the locking path", async () => {
      const h = await opened();
      const intake = rt.a2a!.callback.intake;
      const stale = (await intake.find(h.bridge.id))!;
      // The sweep (say) learns of progress meanwhile: the row moves to a new version.
      const deps = { pool: rt.pool, bridges: rt.stores.bridges, publisher: rt.publisher, maxPayloadBytes: rt.config.bus.maxPayloadBytes, signer: rt.busAuth.signer(GATEWAY_SENDER) };
      expect(await applyObservation(deps, h.bridge.id, { foreignTaskId: h.foreignTaskId, state: "working", artifacts: [{ artifactId: "a", parts: [1] }] })).toBe("updated");
      // A whole terminal task with no artifacts keeps what was collected (it replaces only with a list of its own).
      expect(await intake.apply(stale, { foreignTaskId: h.foreignTaskId, state: "completed", artifacts: [], complete: true })).toBe("resumed");
      expect((await rt.metrics.a2aCallbackConflicts.get()).values[0]?.value).toBe(1);
      const done = await rt.finished(ORG, h.taskId);
      // The artifact recorded by the other writer is kept: the push was applied to the fresh row, not the stale one.
      expect(done).toMatchObject({ status: "completed", steps: [{ output: 1 }] });
      // A stale read of a resolved bridge changes nothing.
      expect(await intake.apply(stale, { foreignTaskId: h.foreignTaskId, state: "failed", artifacts: [] })).toBe("ignored");
      expect((await listBridges(rt.pool, ORG, h.taskId))[0]).toMatchObject({ status: "completed" });
      expect((await listAudit(rt.pool, ORG, { taskId: h.taskId })).filter((r) => r.action === "result")).toHaveLength(1);
    });
  });

  it("fails the step closed with FOREIGN_OUTPUT_TOO_LARGE when streamed artifacts outgrow the payload cap", async () => {
    await setUp({ maxPayloadBytes: 8192 });
    const h = await opened();
    const chunk = "x".repeat(5_000);
    // Each push is well under the body cap; together they exceed twice the 8 KiB payload cap by the fourth.
    let last;
    for (let i = 0; i < 10; i++) {
      last = await postPush(h.url, artifact(h.foreignTaskId, chunk, true), h.header);
      if (last.text.includes("resumed")) break;
    }
    expect(last!.status).toBe(200);
    expect(last!.text).toContain("resumed");
    const failed = await rt.finished(ORG, h.taskId);
    expect(failed.error).toMatchObject({ code: "FOREIGN_OUTPUT_TOO_LARGE" });
    expect((await listBridges(rt.pool, ORG, h.taskId))[0]).toMatchObject({ status: "failed" });
    // Later pushes change nothing.
    expect((await postPush(h.url, completed(h.foreignTaskId), h.header)).text).toContain("already resolved");
  });

  it("fails the step closed with FOREIGN_OUTPUT_TOO_LARGE when the final output exceeds the payload cap", async () => {
    await setUp({ maxPayloadBytes: 4096 });
    const h = await opened();
    expect((await postPush(h.url, { task: { id: h.foreignTaskId, contextId: "ctx", status: { state: "TASK_STATE_COMPLETED" }, artifacts: [{ artifactId: "r", parts: [{ text: "y".repeat(5000) }] }] } }, h.header)).status).toBe(200);
    const failed = await rt.finished(ORG, h.taskId);
    expect(failed.error).toMatchObject({ code: "FOREIGN_OUTPUT_TOO_LARGE" });
    expect(failed.error!.message).toMatch(/4096-byte/);
    const audit = await listAudit(rt.pool, ORG, { taskId: h.taskId });
    expect(audit.map((r) => `${r.action}:${r.verdict}:${r.actor}`)).toEqual(["a2a_egress:allow:coordinator", "result:failed:foreign:helper"]);
  });

  it("holds a foreign resume while the tenant's coordinator is switched off, and applies it once switched on", async () => {
    await setUp();
    const h = await opened();
    await setFlag(createPostgresFlagStore(), rt.pool, { name: "COORDINATOR_ENABLED", scopeKind: "tenant", scope: ORG, enabled: false, actor: "sre:test", reason: "test" });
    await rt.flags.refresh();
    // A whole terminal Task: a bare `completed` status push would wait for a confirming GetTask.
    expect((await postPush(h.url, artifact(h.foreignTaskId, { ok: 1 }), h.header)).status).toBe(200);
    expect((await postPush(h.url, completedTask(h.foreignTaskId, { ok: 1 }), h.header)).text).toContain("resumed");
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect((await rt.tasks.get(ORG, h.taskId)).status).toBe("running");
    await setFlag(createPostgresFlagStore(), rt.pool, { name: "COORDINATOR_ENABLED", scopeKind: "tenant", scope: ORG, enabled: true, actor: "sre:test", reason: "test over" });
    await rt.flags.refresh();
    expect((await rt.finished(ORG, h.taskId)).status).toBe("completed");
    expect((await listAudit(rt.pool, ORG, { taskId: h.taskId })).filter((r) => r.action === "result")).toHaveLength(1);
  });

  it("sends nothing for a tenant whose coordinator is switched off, and sends once it is on again", async () => {
    await setUp({ coordinator: false });
    await setFlag(createPostgresFlagStore(), rt.pool, { name: "COORDINATOR_ENABLED", scopeKind: "tenant", scope: ORG, enabled: false, actor: "sre:test", reason: "pause" });
    await rt.flags.refresh();
    rt.startCoordinator();
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "one" });
    // The hop was governed and its bridge written; the sender (a coordinator job, every 100 ms here) holds it.
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(helper.received).toHaveLength(0);
    expect((await listBridges(rt.pool, ORG, taskId))[0]).toMatchObject({ status: "pending_send" });
    await setFlag(createPostgresFlagStore(), rt.pool, { name: "COORDINATOR_ENABLED", scopeKind: "tenant", scope: ORG, enabled: true, actor: "sre:test", reason: "resume" });
    await rt.flags.refresh();
    await waitFor(async () => ((await listBridges(rt.pool, ORG, taskId))[0]?.status === "dispatched" ? true : undefined), { what: "the send after the switch" });
    expect(helper.received).toHaveLength(1);
  });

  it("hands a claimed bridge back, once, when flags without a tenant list switch its tenant off", async () => {
    await setUp({ coordinator: false });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "one" });
    const a2a = rt.a2a!;
    // Flags that can say "off" per tenant but cannot list tenants for the claim's SQL filter.
    const sender = new ForeignSender({
      pool: rt.pool,
      bridges: rt.stores.bridges,
      agents: rt.stores.foreignAgents,
      linkKeys: rt.stores.linkKeys,
      maxPayloadBytes: rt.config.bus.maxPayloadBytes,
      signer: rt.busAuth.signer(GATEWAY_SENDER),
      transports: a2a.transports,
      breakers: a2a.breakers,
      foreign: rt.config.foreign,
      publicUrl: rt.publicUrl,
      flags: { busEnabled: () => true, coordinatorEnabled: () => false },
    });
    expect(await sender.run()).toBe(0);
    expect(helper.received).toHaveLength(0);
    const [bridge] = await listBridges(rt.pool, ORG, taskId);
    expect(bridge).toMatchObject({ status: "pending_send" });
    const { rows } = await rt.pool.query("SELECT claimed_until FROM a2a_bridge WHERE id = $1", [bridge!.id]);
    expect(rows[0].claimed_until).toBeNull();
  });

  it("refuses a push claiming another bridge's task inside a batch, and still applies the others", async () => {
    // No coordinator: the sender never runs, so the bridges stay `pending_send` with no foreign task id yet,
    // and the first push may record one (a push that beats the send's answer).
    await setUp({ coordinator: false });
    const starts = await Promise.all([0, 1, 2].map(() => rt.tasks.start({ orgId: ORG, workflow: "one" })));
    const bridges = await Promise.all(starts.map(async (s) => (await listBridges(rt.pool, ORG, s.taskId))[0]!));
    // The tenant's first hops, at once, still share one link key (its creation is serialised).
    expect(new Set(bridges.map((b) => b.tokenKid)).size).toBe(1);
    const keys = await Promise.all(bridges.map(async (b) => (await getLinkKey(rt.pool, ORG, b.tokenKid))!));
    const push = (i: number, foreignTaskId: string) => {
      const key = keys[i]!;
      return postPush(`${rt.publicUrl}/api/v1/a2a/callback/${bridges[i]!.id}?t=${signCallbackToken(key, { bridgeId: bridges[i]!.id, orgId: ORG, expiresAtMs: Date.now() + 60_000 })}`, working(foreignTaskId), {
        "x-a2a-notification-token": notificationSecret(key, bridges[i]!.id),
      });
    };
    // Straight to the intake, so the two land in one batch behind the first: the batch's single statement fails
    // on the unique (tenant, foreign task id) and its items are applied one by one.
    const intake = rt.a2a!.callback.intake;
    const targets = await Promise.all(bridges.map(async (b) => (await intake.find(b.id))!));
    const first = intake.apply(targets[0]!, { foreignTaskId: "ft-a", state: "working", artifacts: [] });
    const claim = intake.apply(targets[1]!, { foreignTaskId: "ft-a", state: "working", artifacts: [] });
    const own = intake.apply(targets[2]!, { foreignTaskId: "ft-c", state: "working", artifacts: [] });
    expect(await first).toBe("updated");
    await expect(claim).rejects.toMatchObject({ code: "23505" });
    expect(await own).toBe("updated");
    // Over HTTP the same claim is a 400 that names the problem.
    const answer = await push(1, "ft-a");
    expect(answer.status).toBe(400);
    expect(answer.text).toMatch(/TASK_MISMATCH/);
    expect((await push(2, "ft-c")).status).toBe(200);
    const after = await Promise.all(starts.map(async (s) => (await listBridges(rt.pool, ORG, s.taskId))[0]!));
    expect(after.map((b) => b.foreignTaskId)).toEqual(["ft-a", null, "ft-c"]);
  });
});

/**
 * The callback route against forged, mismatched, oversize, duplicate, reordered and late pushes. The agent never
 * pushes by itself (`no-push`) and the sweep waits a minute, so every push here is ours and the bridge stays open
 * until we resolve it.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { getLinkKey } from "../../../src/store/approvals/postgres-link-key-store.js";
import { listAudit } from "../../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../../src/governance/audit-verify.js";
import { listBridges, type BridgeRecord } from "../../../src/store/bridges/postgres-bridge-store.js";
import { signCallbackToken } from "../../../src/foreign/callback-token.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { waitFor } from "../../support/runtime.js";
import { createForeignRuntime, postPush, type ForeignTestRuntime } from "./support.js";

const ORG = "acme";
const OTHER = "globex";

describe("A2A callback route", () => {
  let rt: ForeignTestRuntime;
  let helper: RunningA2AAgent;

  beforeEach(async () => {
    rt = await createForeignRuntime({ callbackMaxBytes: 4096 });
    helper = await startA2AAgent({ dialect: "1.0", behaviour: "no-push" });
    for (const org of [ORG, OTHER]) {
      await rt.register(org, { agentKey: "helper", baseUrl: helper.baseUrl });
      await rt.submit(org, `
name: one
steps:
  - { id: b, to: "foreign:helper" }
`);
    }
    rt.startCoordinator();
  });
  afterEach(async () => {
    await helper.close();
    await rt.cleanup();
  });

  /** Starts a task for `org` and waits until its bridge has been sent. */
  async function opened(org: string) {
    const { taskId } = await rt.tasks.start({ orgId: org, workflow: "one" });
    const bridge = await waitFor(async () => {
      const [b] = await listBridges(rt.pool, org, taskId);
      return b?.status === "dispatched" ? b : undefined;
    });
    const received = helper.received.find((r) => (r.metadata as { switchyard?: { taskId?: string } })?.switchyard?.taskId === taskId)!;
    return { taskId, bridge, url: received.pushConfig!.url, token: received.pushConfig!.token, foreignTaskId: received.taskId };
  }

  const task = (id: string, state: string, artifacts: unknown[] = []) => ({ task: { id, contextId: "ctx", status: { state }, artifacts } });
  const artifact = (value: unknown) => ({ artifactId: "result", parts: [{ data: value }] });

  async function unchanged(org: string, taskId: string, before: BridgeRecord) {
    const [after] = await listBridges(rt.pool, org, taskId);
    expect(after).toMatchObject({ status: before.status, artifacts: before.artifacts, lastState: before.lastState, foreignTaskId: before.foreignTaskId });
    expect((await listAudit(rt.pool, org, { taskId })).map((a) => a.action)).toEqual(["a2a_egress"]);
    expect((await rt.tasks.get(org, taskId)).status).toBe("running");
  }

  it("refuses forged, mismatched, expired, cross-tenant and oversize pushes; nothing changes", async () => {
    const a = await opened(ORG);
    const b = await opened(OTHER);
    const header = { "x-a2a-notification-token": a.token };
    const done = task(a.foreignTaskId, "TASK_STATE_COMPLETED", [artifact({ x: 1 })]);

    // Forged URL token: the signature altered.
    const [payload, signature] = new URL(a.url).searchParams.get("t")!.split(".");
    const forged = `${rt.publicUrl}/api/v1/a2a/callback/${a.bridge.id}?t=${payload}.${signature!.startsWith("A") ? "B" : "A"}${signature!.slice(1)}`;
    expect((await postPush(forged, done, header)).status).toBe(401);
    // No token, a wrong notification token, none at all.
    expect((await postPush(a.url.replace(/\?t=.*$/, ""), done, header)).status).toBe(401);
    expect((await postPush(a.url, done, { "x-a2a-notification-token": "not-the-secret" })).status).toBe(401);
    expect((await postPush(a.url, done, { authorization: `Bearer ${b.token}` })).status).toBe(401);
    expect((await postPush(a.url, done)).status).toBe(401);
    // Expired: properly signed with the tenant's key, but past its expiry.
    const key = (await getLinkKey(rt.pool, ORG, a.bridge.tokenKid))!;
    const expired = signCallbackToken(key, { bridgeId: a.bridge.id, orgId: ORG, expiresAtMs: Date.now() - 1000 });
    expect((await postPush(`${rt.publicUrl}/api/v1/a2a/callback/${a.bridge.id}?t=${expired}`, done, header)).status).toBe(401);
    // Another tenant's bridge: tenant A's token and secret on B's callback, and B's URL token claiming A.
    const bToken = new URL(b.url).searchParams.get("t")!;
    expect((await postPush(`${rt.publicUrl}/api/v1/a2a/callback/${b.bridge.id}?t=${new URL(a.url).searchParams.get("t")}`, done, header)).status).toBe(401);
    expect((await postPush(`${rt.publicUrl}/api/v1/a2a/callback/${a.bridge.id}?t=${bToken}`, done, { "x-a2a-notification-token": b.token })).status).toBe(401);
    const crossSigned = signCallbackToken((await getLinkKey(rt.pool, OTHER, b.bridge.tokenKid))!, { bridgeId: a.bridge.id, orgId: OTHER, expiresAtMs: Date.now() + 60_000 });
    expect((await postPush(`${rt.publicUrl}/api/v1/a2a/callback/${a.bridge.id}?t=${crossSigned}`, done, header)).status).toBe(401);
    // Authentic, but about another task; malformed; oversize.
    const mismatch = await postPush(a.url, task("someone-elses-task", "TASK_STATE_COMPLETED"), header);
    expect(mismatch.status).toBe(400);
    expect(mismatch.text).toMatch(/TASK_MISMATCH/);
    const malformed = await postPush(a.url, { statusUpdate: { taskId: a.foreignTaskId } }, header);
    expect(malformed.status).toBe(400);
    expect(malformed.text).toMatch(/INVALID_SHAPE/);
    expect((await postPush(a.url, task(a.foreignTaskId, "TASK_STATE_COMPLETED", [artifact("x".repeat(5000))]), header)).status).toBe(413);
    expect((await postPush(`${rt.publicUrl}/api/v1/a2a/callback/00000000-0000-4000-8000-000000000000?t=x`, done, header)).status).toBe(401);
    expect((await postPush(`${rt.publicUrl}/api/v1/a2a/callback/%zz?t=x`, done, header)).status).toBe(401);

    await unchanged(ORG, a.taskId, a.bridge);
    await unchanged(OTHER, b.taskId, b.bridge);

    // The genuine push, with Bearer instead of the header, still works afterwards.
    expect((await postPush(a.url, done, { authorization: `Bearer ${a.token}` })).status).toBe(200);
    expect(await rt.finished(ORG, a.taskId)).toMatchObject({ status: "completed", steps: [{ output: { x: 1 } }] });
    await unchanged(OTHER, b.taskId, b.bridge);
  });

  it("resumes exactly once under duplicate, reordered and late pushes", async () => {
    const a = await opened(ORG);
    const header = { "x-a2a-notification-token": a.token };
    const id = a.foreignTaskId;
    // Progress first: working, then an artifact update (v1.0), merged into the bridge.
    expect((await postPush(a.url, { statusUpdate: { taskId: id, contextId: "ctx", status: { state: "TASK_STATE_WORKING" } } }, header)).status).toBe(200);
    expect((await postPush(a.url, { artifactUpdate: { taskId: id, contextId: "ctx", artifact: artifact({ part: 1 }) } }, header)).status).toBe(200);
    const [working] = await listBridges(rt.pool, ORG, a.taskId);
    expect(working).toMatchObject({ status: "working", lastState: "working", artifacts: [{ artifactId: "result", parts: [{ part: 1 }] }] });

    // The final Task arrives five times at once (a whole terminal task resolves at once; a `completed` status push
    // alone would wait for its GetTask confirmation).
    const final = { task: { id, contextId: "ctx", status: { state: "TASK_STATE_COMPLETED" }, artifacts: [artifact({ part: 1 })] } };
    const answers = await Promise.all(Array.from({ length: 5 }, () => postPush(a.url, final, header)));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers.filter((r) => r.text.includes("resumed"))).toHaveLength(1);
    // Late and reordered: an older "working", a different artifact, a v0.3 snapshot saying failed.
    expect((await postPush(a.url, { statusUpdate: { taskId: id, contextId: "ctx", status: { state: "TASK_STATE_WORKING" } } }, header)).status).toBe(200);
    expect((await postPush(a.url, { artifactUpdate: { taskId: id, contextId: "ctx", artifact: artifact({ part: 2 }) } }, header)).status).toBe(200);
    const v03 = await fetch(a.url, {
      method: "POST",
      headers: { "content-type": "application/json", "x-a2a-notification-token": a.token },
      body: JSON.stringify({ kind: "task", id, contextId: "ctx", status: { state: "failed" } }),
    });
    expect(v03.status).toBe(200);

    const done = await rt.finished(ORG, a.taskId);
    expect(done).toMatchObject({ status: "completed", steps: [{ status: "completed", output: { part: 1 } }] });
    const audit = await listAudit(rt.pool, ORG, { taskId: a.taskId });
    expect(audit.map((r) => `${r.action}:${r.verdict}:${r.actor}`)).toEqual(["a2a_egress:allow:coordinator", "result:accepted:foreign:helper"]);
    expect((await listBridges(rt.pool, ORG, a.taskId))[0]).toMatchObject({ status: "completed", artifacts: [{ artifactId: "result", parts: [{ part: 1 }] }] });
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("answers 400 to a push whose status.state is no A2A state (either dialect) and changes nothing", async () => {
    const a = await opened(ORG);
    const header = { "x-a2a-notification-token": a.token };
    for (const state of ["TASK_STATE_DONE", "done", "input_required", "Completed", 42]) {
      const v1 = await postPush(a.url, { statusUpdate: { taskId: a.foreignTaskId, contextId: "ctx", status: { state } } }, header);
      expect(v1.status).toBe(400);
      expect(v1.text).toMatch(/INVALID_STATE/);
      const v03 = await fetch(a.url, {
        method: "POST",
        headers: { "content-type": "application/json", "x-a2a-notification-token": a.token },
        body: JSON.stringify({ kind: "task", id: a.foreignTaskId, contextId: "ctx", status: { state } }),
      });
      expect(v03.status).toBe(400);
      expect(await v03.text()).toMatch(/INVALID_STATE/);
    }
    const [after] = await listBridges(rt.pool, ORG, a.taskId);
    expect(after!.updatedAt.getTime()).toBe(a.bridge.updatedAt.getTime());
    await unchanged(ORG, a.taskId, a.bridge);
  });

  it("a duplicate non-terminal push writes nothing: updated_at stays, the answer says unchanged", async () => {
    const a = await opened(ORG);
    const header = { "x-a2a-notification-token": a.token };
    const working = { statusUpdate: { taskId: a.foreignTaskId, contextId: "ctx", status: { state: "TASK_STATE_WORKING" } } };
    const progress = task(a.foreignTaskId, "TASK_STATE_WORKING", [artifact({ part: 1 })]);
    expect((await postPush(a.url, working, header)).text).toMatch(/updated/);
    expect((await postPush(a.url, progress, header)).text).toMatch(/updated/);
    const [first] = await listBridges(rt.pool, ORG, a.taskId);
    expect(first).toMatchObject({ status: "working", lastState: "working", artifacts: [{ artifactId: "result", parts: [{ part: 1 }] }] });
    // Let the clock move on, so a write (now()) would be visible.
    await new Promise((resolve) => setTimeout(resolve, 20));
    for (const body of [working, progress, working]) {
      const answer = await postPush(a.url, body, header);
      expect(answer.status).toBe(200);
      expect(answer.text).toMatch(/unchanged/);
    }
    const [after] = await listBridges(rt.pool, ORG, a.taskId);
    expect(after!.updatedAt.getTime()).toBe(first!.updatedAt.getTime());
    expect(after).toMatchObject({ status: "working", lastState: "working", artifacts: first!.artifacts });
    // Something new still lands.
    expect((await postPush(a.url, task(a.foreignTaskId, "TASK_STATE_WORKING", [artifact({ part: 2 })]), header)).text).toMatch(/updated/);
    const [changed] = await listBridges(rt.pool, ORG, a.taskId);
    expect(changed!.updatedAt.getTime()).toBeGreaterThan(first!.updatedAt.getTime());
  });

  it("fails the step closed on input-required and on a failed task, with clear codes", async () => {
    const a = await opened(ORG);
    const header = { "x-a2a-notification-token": a.token };
    const interrupted = { statusUpdate: { taskId: a.foreignTaskId, contextId: "ctx", status: { state: "TASK_STATE_INPUT_REQUIRED", message: { messageId: "m", role: "ROLE_AGENT", parts: [{ text: "which city?" }] } } } };
    expect((await postPush(a.url, interrupted, header)).status).toBe(200);
    const failed = await rt.finished(ORG, a.taskId);
    expect(failed.error).toMatchObject({ code: "FOREIGN_INPUT_REQUIRED" });
    expect(failed.error!.message).toMatch(/which city\?/);
    const rows = await listAudit(rt.pool, ORG, { taskId: a.taskId });
    expect(rows.map((r) => `${r.action}:${r.verdict}`)).toEqual(["a2a_egress:allow", "result:failed"]);

    const b = await opened(ORG);
    expect((await postPush(b.url, task(b.foreignTaskId, "TASK_STATE_FAILED"), { "x-a2a-notification-token": b.token })).status).toBe(200);
    expect((await rt.finished(ORG, b.taskId)).error).toMatchObject({ code: "FOREIGN_FAILED" });
  });
});

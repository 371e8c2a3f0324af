/**
 * The reply verb's refusals, decided before any dial: each leaves a `refused` row (without the words) and an
 * audit row with verdict deny and rule `builtin:<code>`, and never a `pending` row a sender could dial.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { addConnection, auditRows, FORGE, replyRows, requestReply, setupTenant, SLACK, startTask } from "./support.js";

const ACME = "acme";
const GLOBEX = "globex";
/** REPLY_ENABLED is not on for this tenant. */
const INITECH = "initech";
const GITHUB_TOKEN = `ghp_${"a1B2c3D4e5".repeat(3)}abcdef`;

describe("reply refusals", () => {
  let rt: TestRuntime;
  let acmeSlack: string;

  beforeAll(async () => {
    rt = await createTestRuntime({ flags: { replyEnabled: true, replyTenants: [ACME, GLOBEX] } });
    for (const org of [ACME, GLOBEX, INITECH]) await setupTenant(rt, org);
    acmeSlack = await addConnection(rt, ACME, { kind: "slack", accountKey: "T0ACME" });
    await addConnection(rt, ACME, { kind: "github", accountKey: "github.com", targets: ["acme/other-*"] });
    await addConnection(rt, INITECH, { kind: "slack", accountKey: "T0ACME" });
  });
  afterAll(async () => {
    await rt.cleanup();
  });

  /** One refused row with the code, its audit row denying with builtin:<code>, and nothing pending. */
  async function expectRefused(orgId: string, taskId: string, code: string): Promise<void> {
    const rows = await replyRows(rt, taskId);
    expect(rows.map((r) => [r.state, r.code])).toEqual([["refused", code]]);
    expect(rows[0]!.text).toBe("");
    const audit = (await auditRows(rt, orgId, taskId)).filter((a) => a.action === "origin_reply");
    expect(audit.map((a) => [a.verdict, a.rule])).toEqual([["deny", `builtin:${code}`]]);
    expect(rows.some((r) => r.state === "pending")).toBe(false);
  }

  it("refuses every reply while REPLY_ENABLED is off for the tenant (reply_disabled)", async () => {
    const taskId = await startTask(rt, INITECH, SLACK);
    const { result } = await requestReply(rt, INITECH, taskId, "done");
    expect(result.replies).toEqual([]);
    await expectRefused(INITECH, taskId, "reply_disabled");
  });

  it("refuses a task with no reply address (no_reply_address)", async () => {
    const taskId = await startTask(rt, ACME, null);
    await requestReply(rt, ACME, taskId, "done");
    await expectRefused(ACME, taskId, "no_reply_address");
  });

  it("refuses empty text and text over 16 KiB (text_too_long)", async () => {
    const empty = await startTask(rt, ACME, SLACK);
    await requestReply(rt, ACME, empty, "");
    await expectRefused(ACME, empty, "text_too_long");
    const long = await startTask(rt, ACME, SLACK);
    await requestReply(rt, ACME, long, "é".repeat(8 * 1024 + 1));
    await expectRefused(ACME, long, "text_too_long");
  });

  it("never uses another tenant's connection: tenant B's task with only A's connection is no_connection (confirmation 3)", async () => {
    // Globex's task names Acme's Slack team; Acme has a connection for it, Globex has none.
    const taskId = await startTask(rt, GLOBEX, SLACK);
    await requestReply(rt, GLOBEX, taskId, "an answer");
    await expectRefused(GLOBEX, taskId, "no_connection");
    const [row] = await replyRows(rt, taskId);
    expect(row!.connection_id).toBeNull();
    expect(row!.connection_id).not.toBe(acmeSlack);
  });

  it("refuses a target the connection's allowlist does not admit (target_not_allowed)", async () => {
    const taskId = await startTask(rt, ACME, FORGE);
    await requestReply(rt, ACME, taskId, "an answer");
    await expectRefused(ACME, taskId, "target_not_allowed");
  });

  it("refuses text carrying a secret, naming the rule and keeping the secret nowhere (secret_detected)", async () => {
    const taskId = await startTask(rt, ACME, SLACK);
    const text = `here is the token you asked for: ${GITHUB_TOKEN}`;
    await requestReply(rt, ACME, taskId, text);
    await expectRefused(ACME, taskId, "secret_detected");
    const [row] = await replyRows(rt, taskId);
    expect(row!.message).toContain("@secretlint/secretlint-rule-github");
    expect(row!.text_sha256).toBe(createHash("sha256").update(text).digest("hex"));
    const everything = JSON.stringify([await replyRows(rt, taskId), await auditRows(rt, ACME, taskId), await rt.tasks.get(ACME, taskId)]);
    expect(everything).not.toContain(GITHUB_TOKEN);
    expect(everything).not.toContain(GITHUB_TOKEN.slice(4, 20));
  });

  it("caps the replies of one task (task_cap_reached) and counts only non-refused rows", async () => {
    const taskId = await startTask(rt, ACME, SLACK);
    const cap = rt.config.origin.replyTaskCap;
    // Distinct actors, so the per-actor token bucket does not refuse first.
    for (let i = 0; i < cap; i++) {
      const { result } = await requestReply(rt, ACME, taskId, `update ${i}`, { sender: { kind: "api", actor: `user:cap-${i}` } });
      expect(result.replies).toHaveLength(1);
    }
    await requestReply(rt, ACME, taskId, "one too many", { sender: { kind: "api", actor: "user:cap-last" } });
    const rows = await replyRows(rt, taskId);
    expect(rows.filter((r) => r.state === "pending")).toHaveLength(cap);
    expect(rows.filter((r) => r.state === "refused").map((r) => r.code)).toEqual(["task_cap_reached"]);
  });

  it("limits each (tenant, actor) to its token bucket (rate_limited)", async () => {
    const taskId = await startTask(rt, ACME, SLACK);
    const burst = rt.config.origin.replyBurst;
    for (let i = 0; i <= burst; i++) await requestReply(rt, ACME, taskId, `tick ${i}`, { sender: { kind: "api", actor: "user:chatty" } });
    const rows = await replyRows(rt, taskId);
    expect(rows.filter((r) => r.state === "pending")).toHaveLength(burst);
    expect(rows.filter((r) => r.state === "refused").map((r) => r.code)).toEqual(["rate_limited"]);
    // Another actor of the same tenant has its own bucket.
    await requestReply(rt, ACME, taskId, "from someone else", { sender: { kind: "api", actor: "user:quiet" } });
    expect((await replyRows(rt, taskId)).filter((r) => r.state === "pending")).toHaveLength(burst + 1);
  });

  it("records one row for two requests with the same idempotency key", async () => {
    const taskId = await startTask(rt, ACME, SLACK);
    const first = await requestReply(rt, ACME, taskId, "hello", { key: "k-1", sender: { kind: "api", actor: "user:idem" } });
    const second = await requestReply(rt, ACME, taskId, "hello again", { key: "k-1", sender: { kind: "api", actor: "user:idem" } });
    expect(first.result.replies).toHaveLength(1);
    expect(second.result.replies).toEqual([]);
    expect(second.result.ignored.map((i) => i.type)).toEqual(["reply_request"]);
    const rows = await replyRows(rt, taskId);
    expect(rows.map((r) => [r.state, r.request_id, r.connection_id])).toEqual([["pending", first.requestId, acmeSlack]]);
    // The allowed reply is audited with the text's hash, the address and the connection — not the text.
    const audit = (await auditRows(rt, ACME, taskId)).filter((a) => a.action === "origin_reply");
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ verdict: "allow", actor: "user:idem", destination: "slack T0ACME C0GENERAL thread 1700000000.000100" });
    expect(audit[0]!.payload_hash).toBe(createHash("sha256").update("hello").digest("hex"));
    expect(String(audit[0]!.reason)).toContain(acmeSlack);
    expect(JSON.stringify(audit)).not.toContain("hello");
  });

  it("keeps every tenant's audit chain verifiable after replies", async () => {
    for (const org of [ACME, GLOBEX, INITECH]) expect((await verifyChain(rt.stores.audit, rt.pool, org)).ok).toBe(true);
  });

  it("counts refusals by code in switchyard_origin_replies_total", async () => {
    const metric = await rt.metrics.registry.getSingleMetric("switchyard_origin_replies_total")!.get();
    const byCode = Object.fromEntries(metric.values.map((v) => [`${v.labels.status}:${v.labels.code}`, v.value]));
    expect(byCode).toMatchObject({ "refused:reply_disabled": 1, "refused:no_connection": 1, "refused:secret_detected": 1, "refused:text_too_long": 2, "refused:rate_limited": 1 });
    expect(JSON.stringify(metric)).not.toContain(GITHUB_TOKEN);
  });
});

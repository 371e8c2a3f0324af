/**
 * Minimal data egress end to end, against real A2A agents on loopback: a registration's `send_fields` decide what
 * leaves; what the agent received, the bridge's request and `sent_hash`, and the hop's audit `payload_hash` agree.
 */
import { createHash } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAudit } from "../../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../../src/governance/audit-verify.js";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { Workers } from "../../support/workers.js";
import { createForeignRuntime, type ForeignTestRuntime } from "../integration/support.js";

const ORG = "acme";
const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

describe("what leaves the perimeter", () => {
  let rt: ForeignTestRuntime;
  let workers: Workers;
  let agents: RunningA2AAgent[];

  beforeEach(async () => {
    rt = await createForeignRuntime();
    workers = new Workers(rt as never);
    agents = [];
    rt.startCoordinator();
  });
  afterEach(async () => {
    await workers.stop();
    await Promise.all(agents.map((a) => a.close()));
    await rt.cleanup();
  });

  async function agent(): Promise<RunningA2AAgent> {
    const started = await startA2AAgent({ dialect: "1.0" });
    agents.push(started);
    return started;
  }

  /** A worker that delegates `payload` to foreign:helper and returns the reply it got. */
  async function delegateOnce(payload: unknown): Promise<{ taskId: string; output: unknown }> {
    workers.start("asker", async (work, ctx) => {
      if (!work.resume) return ctx.delegate("foreign:helper", payload);
      const reply = work.resume.reply;
      return { status: reply.status, error: reply.status === "ok" ? null : reply.error };
    });
    await rt.submit(ORG, `
name: ask
steps:
  - { id: ask, to: "role:asker" }
`);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "ask" });
    const task = await rt.finished(ORG, taskId);
    expect(task.status).toBe("completed");
    return { taskId, output: task.steps.find((s) => s.id === "ask")!.output };
  }

  async function egressRow(taskId: string, stepId: string) {
    const audit = await listAudit(rt.pool, ORG, { taskId });
    const row = audit.find((a) => a.action === "a2a_egress" && a.stepId === stepId);
    expect(row, "the hop's audit row").toBeDefined();
    return row!;
  }

  it("sends only the listed field: the agent never sees the others; the audit row hashes exactly what was sent", async () => {
    const helper = await agent();
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl, sendFields: ["city"] });
    const { taskId, output } = await delegateOnce({ city: "Oslo", ssn: "123-45-6789", note: "private" });
    expect(output).toMatchObject({ status: "ok" });

    expect(helper.received).toHaveLength(1);
    // The data part, then its text rendering (the lab agent accepts both): neither carries more.
    expect(helper.received[0]!.parts).toEqual([{ city: "Oslo" }, JSON.stringify({ city: "Oslo" }, null, 2)]);
    expect(JSON.stringify(helper.received[0])).not.toMatch(/123-45-6789|private|ssn|note/);

    const expected = sha256('{"city":"Oslo"}');
    const [bridge] = await listBridges(rt.pool, ORG, taskId);
    expect(bridge).toMatchObject({ request: { city: "Oslo" }, sentHash: expected, status: "completed" });
    const row = await egressRow(taskId, "ask.d1");
    expect(row.envelopeId).toBe(bridge!.id);
    expect(row.payloadHash).toBe(expected);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("follows a dotted path into a workflow step's input ({ task, steps })", async () => {
    const helper = await agent();
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl, sendFields: ["task.city", "task.zip"] });
    await rt.submit(ORG, `
name: lookup
steps:
  - { id: b, to: "foreign:helper" }
`);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "lookup", input: { city: "Bergen", ssn: "987", card: { pan: "4111" } } });
    const task = await rt.finished(ORG, taskId);
    expect(task.status).toBe("completed");
    // The data part, then its text rendering (the lab agent accepts both): neither carries more.
    expect(helper.received[0]!.parts).toEqual([{ task: { city: "Bergen" } }, JSON.stringify({ task: { city: "Bergen" } }, null, 2)]);
    const expected = sha256('{"task":{"city":"Bergen"}}');
    expect((await listBridges(rt.pool, ORG, taskId))[0]).toMatchObject({ sentHash: expected });
    expect((await egressRow(taskId, "b")).payloadHash).toBe(expected);
  });

  it("sends the whole input when no fields are listed, and still hashes exactly that", async () => {
    const helper = await agent();
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl });
    const { taskId } = await delegateOnce({ zeta: 1, city: "Oslo", ssn: "123" });
    // The data part, then its text rendering (the lab agent accepts both): neither carries more.
    const [data, text] = helper.received[0]!.parts as [unknown, string];
    expect(data).toEqual({ zeta: 1, city: "Oslo", ssn: "123" });
    expect(JSON.parse(text)).toEqual({ zeta: 1, city: "Oslo", ssn: "123" });
    const expected = sha256('{"city":"Oslo","ssn":"123","zeta":1}');
    expect((await listBridges(rt.pool, ORG, taskId))[0]).toMatchObject({ sentHash: expected });
    expect((await egressRow(taskId, "ask.d1")).payloadHash).toBe(expected);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("refuses an input that is not an object when fields are listed: nothing sent, no bridge, a clear code", async () => {
    const helper = await agent();
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl, sendFields: ["city"] });
    const { taskId, output } = await delegateOnce("Oslo, and my ssn is 123");
    expect(output).toMatchObject({ status: "error", error: { code: "FOREIGN_INPUT_NOT_SENDABLE" } });
    expect((output as { error: { message: string } }).error.message).toMatch(/not an object/);
    expect(helper.received).toHaveLength(0);
    expect(await listBridges(rt.pool, ORG, taskId)).toEqual([]);
    const task = await rt.tasks.get(ORG, taskId);
    expect(task.steps.find((s) => s.id === "ask.d1")).toMatchObject({ status: "failed", error: { code: "FOREIGN_INPUT_NOT_SENDABLE" } });
  });
});

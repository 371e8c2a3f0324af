/**
 * A hostile bus (issue 8 §3): anything able to XADD to the coordinator inbox tries to complete, extend or delegate
 * other identities' steps. Each forged envelope is refused — dead-lettered with a reason, counted, never applied —
 * and changes nothing (step state, audit rows, cost); the genuine envelope still applies afterwards.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BusAuth } from "../../src/bus/auth/bus-auth.js";
import { GATEWAY_SENDER, parseBusSecrets } from "../../src/bus/auth/bus-keys.js";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { EndpointKind, EnvelopeKind, ResultStatus, createEnvelope, jsonPayload, type Envelope } from "../../src/bus/codec.js";
import { COORDINATOR_GROUP } from "../../src/coordinator/coordinator.js";
import { envelopeToEvent } from "../../src/coordinator/envelopes.js";
import type { ForeignDispatcher } from "../../src/coordinator/foreign-dispatcher.js";
import { heldStreamName } from "../../src/flags/held-inbox.js";
import { listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { publishSigned } from "../support/bus-auth.js";
import { createTestRuntime, waitFor, type TestRuntime } from "../support/runtime.js";
import { Workers } from "../support/workers.js";

const ACME = "acme";
const GLOBEX = "globex";
/** FOREIGN hops are accepted by this port and then wait for their RESULT, as the A2A adapter's do. */
const acceptingForeign: ForeignDispatcher = { dispatch: async () => ({ accepted: true }) };

describe("the coordinator refuses a forged inbox envelope", () => {
  let rt: TestRuntime;
  let workers: Workers;

  beforeEach(async () => {
    // COORDINATOR_ENABLED for the two real tenants only: anything else would be held.
    rt = await createTestRuntime({ foreign: acceptingForeign, egress: { egressEnabled: () => true }, flags: { coordinatorTenants: [ACME, GLOBEX] } });
    workers = new Workers(rt);
    for (const org of [ACME, GLOBEX]) {
      await submitWorkflow(rt.pool, org, parseWorkflowDefinition('name: one\nsteps:\n  - { id: a, to: "role:writer", timeout: 10m, cost_estimate: 2 }\n'));
      await submitWorkflow(rt.pool, org, parseWorkflowDefinition('name: other\nsteps:\n  - { id: a, to: "role:reader", timeout: 10m }\n'));
    }
    await submitWorkflow(rt.pool, ACME, parseWorkflowDefinition('name: ext\nsteps:\n  - { id: f, to: "foreign:checker", timeout: 10m, cost_estimate: 1 }\n'));
    rt.startCoordinator();
  });
  afterEach(async () => {
    await workers.stop();
    await rt.cleanup();
  });

  function result(orgId: string, taskId: string, stepId: string, fields: { source?: { kind: EndpointKind; id: string }; payload?: { data: Uint8Array; contentType: string } } = {}): Envelope {
    return createEnvelope({
      id: crypto.randomUUID(),
      orgId,
      taskId,
      stepId,
      attempt: 1,
      kind: EnvelopeKind.RESULT,
      status: ResultStatus.OK,
      source: fields.source ?? { kind: EndpointKind.ROLE, id: "writer" },
      payload: fields.payload ?? jsonPayload({ forged: true }),
      usage: { cost: 0.25 },
    });
  }

  /** Everything a forged envelope could have changed. */
  async function snapshot(taskId: string) {
    const { rows: steps } = await rt.pool.query(
      "SELECT step_id, status, attempt, cost, due_at_ms::text, output::text, checkpoint::text FROM steps WHERE task_id = $1 ORDER BY step_id",
      [taskId],
    );
    const { rows: tasks } = await rt.pool.query("SELECT status, cost FROM tasks WHERE id = $1", [taskId]);
    const { rows: audit } = await rt.pool.query("SELECT org_id, seq, action, actor FROM audit_log ORDER BY org_id, seq");
    return { steps, tasks, audit };
  }

  async function refusals(reason: string): Promise<number> {
    return (await rt.metrics.inboxRefused.get()).values.find((v) => v.labels.reason === reason)?.value ?? 0;
  }

  async function deadLetters(count: number) {
    return waitFor(
      async () => {
        const letters = await rt.bus.listDeadLetters(COORDINATOR_STREAM);
        return letters.length >= count ? letters : undefined;
      },
      { what: `${count} dead letter(s) on the coordinator inbox` },
    );
  }

  async function inboxSettled(): Promise<void> {
    await waitFor(async () => (await rt.bus.stats(COORDINATOR_STREAM, COORDINATOR_GROUP)).pending === 0 || undefined, { what: "the inbox to be drained" });
  }

  it("a RESULT for another tenant's step, or from a queue the step was not dispatched to, changes nothing", async () => {
    const { taskId } = await rt.tasks.start({ orgId: ACME, workflow: "one" });
    const before = await snapshot(taskId);
    // The reader harness (serving globex's steps) completes acme's writer step; the writer harness claims the
    // task for globex.
    await publishSigned(rt, "role:reader", [result(ACME, taskId, "a", { source: { kind: EndpointKind.ROLE, id: "reader" } })]);
    await publishSigned(rt, "role:writer", [result(GLOBEX, taskId, "a")]);
    const letters = await deadLetters(2);
    await inboxSettled();
    expect(letters.map((l) => l.reason).sort()).toEqual([
      expect.stringMatching(/^REFUSED: RESULT from role:reader for step a, whose destination is role:writer/),
      expect.stringMatching(/^REFUSED: task .* is not a task of tenant globex/),
    ]);
    expect(await refusals("wrong_sender")).toBe(1);
    expect(await refusals("tenant_mismatch")).toBe(1);
    expect(await snapshot(taskId)).toEqual(before);

    // The step's own queue still completes it: a refused envelope's id is not taken, and nothing is doubled.
    const genuine = result(ACME, taskId, "a");
    await publishSigned(rt, "role:writer", [genuine]);
    await waitFor(async () => (await rt.tasks.get(ACME, taskId)).status === "completed" || undefined, { what: "the genuine result to apply" });
    expect((await listAudit(rt.pool, ACME, { taskId })).map((a) => [a.action, a.actor])).toEqual([
      ["dispatch", "coordinator"],
      ["result", "worker:role:writer"],
    ]);
  });

  it("a FOREIGN-sourced RESULT from a harness, or from the gateway for another agent, changes nothing", async () => {
    const { taskId } = await rt.tasks.start({ orgId: ACME, workflow: "ext" });
    await waitFor(async () => (await rt.tasks.get(ACME, taskId)).steps[0]?.status === "dispatched" || undefined, { what: "the foreign step in flight" });
    const before = await snapshot(taskId);
    const claimingAgent = (agent: string) => ({ source: { kind: EndpointKind.FOREIGN, id: agent } });
    // A harness claims to be the agent (the callback route bypassed), or names no FOREIGN source at all.
    await publishSigned(rt, "role:writer", [result(ACME, taskId, "f", claimingAgent("checker"))]);
    await publishSigned(rt, "role:writer", [result(ACME, taskId, "f")]);
    // Signed as the gateway, but for an agent that is not the step's (one that does not even exist).
    await publishSigned(rt, GATEWAY_SENDER, [result(ACME, taskId, "f", claimingAgent("nobody"))]);
    const letters = await deadLetters(3);
    await inboxSettled();
    expect(letters.map((l) => l.reason).sort()).toEqual([
      expect.stringMatching(/^REFUSED: RESULT from role:writer for step f, a FOREIGN step \(foreign:checker\): its result comes only through the callback route or the sweep/),
      expect.stringMatching(/^REFUSED: RESULT from the gateway \(for foreign:nobody\) for step f, whose destination is foreign:checker/),
      expect.stringMatching(/^UNAUTHENTICATED: role:writer claims a FOREIGN source/),
    ]);
    expect(await refusals("source_mismatch")).toBe(1);
    expect(await refusals("wrong_sender")).toBe(2);
    expect(await snapshot(taskId)).toEqual(before);
    expect((await snapshot(taskId)).audit.map((a) => a.actor)).not.toContain("foreign:nobody");

    // The gateway's RESULT for the step's own agent applies, audited as that agent.
    await publishSigned(rt, GATEWAY_SENDER, [result(ACME, taskId, "f", claimingAgent("checker"))]);
    await waitFor(async () => (await rt.tasks.get(ACME, taskId)).status === "completed" || undefined, { what: "the gateway's result to apply" });
    expect((await listAudit(rt.pool, ACME, { taskId })).map((a) => [a.action, a.actor])).toEqual([
      ["a2a_egress", "coordinator"],
      ["result", "foreign:checker"],
    ]);
  });

  it("a heartbeat from another queue does not extend the step", async () => {
    const { taskId } = await rt.tasks.start({ orgId: ACME, workflow: "one" });
    const before = await snapshot(taskId);
    await new Promise((r) => setTimeout(r, 20)); // a heartbeat applied now would move the due time
    const heartbeat = createEnvelope({ id: crypto.randomUUID(), orgId: ACME, taskId, stepId: "a", attempt: 1, kind: EnvelopeKind.CONTROL, payload: jsonPayload({ type: "heartbeat" }) });
    await publishSigned(rt, "role:reader", [heartbeat]);
    const [letter] = await deadLetters(1);
    await inboxSettled();
    expect(letter!.reason).toMatch(/^REFUSED: heartbeat from role:reader for step a, whose destination is role:writer/);
    expect(await refusals("wrong_sender")).toBe(1);
    expect(await snapshot(taskId)).toEqual(before);
  });

  it("a FOREIGN step is kept alive only by the gateway for its agent: not by a worker, and the gateway not for a role step or another agent's", async () => {
    const ext = await rt.tasks.start({ orgId: ACME, workflow: "ext" });
    const one = await rt.tasks.start({ orgId: ACME, workflow: "one" });
    await waitFor(async () => (await rt.tasks.get(ACME, ext.taskId)).steps[0]?.status === "dispatched" || undefined, { what: "the foreign step in flight" });
    const before = { ext: await snapshot(ext.taskId), one: await snapshot(one.taskId) };
    await new Promise((r) => setTimeout(r, 20)); // a heartbeat applied now would move the due time
    const heartbeat = (taskId: string, stepId: string, agent?: string, attempt = 1) =>
      createEnvelope({
        id: crypto.randomUUID(),
        orgId: ACME,
        taskId,
        stepId,
        attempt,
        kind: EnvelopeKind.CONTROL,
        ...(agent ? { source: { kind: EndpointKind.FOREIGN, id: agent } } : {}),
        payload: jsonPayload({ type: "heartbeat" }),
      });
    await publishSigned(rt, "role:writer", [heartbeat(ext.taskId, "f")]);
    await publishSigned(rt, GATEWAY_SENDER, [heartbeat(one.taskId, "a", "checker")]);
    await publishSigned(rt, GATEWAY_SENDER, [heartbeat(ext.taskId, "f", "nobody")]);
    // The step's own agent, but an attempt that is not in flight: ignored, not refused (a call outliving its attempt).
    await publishSigned(rt, GATEWAY_SENDER, [heartbeat(ext.taskId, "f", "checker", 2)]);
    const letters = await deadLetters(3);
    await inboxSettled();
    expect(letters.map((l) => l.reason).sort()).toEqual([
      expect.stringMatching(/^REFUSED: heartbeat from role:writer for step f, a FOREIGN step \(foreign:checker\)/),
      expect.stringMatching(/^REFUSED: heartbeat from the gateway \(for foreign:checker\) for step a, whose destination is role:writer/),
      expect.stringMatching(/^REFUSED: heartbeat from the gateway \(for foreign:nobody\) for step f, whose destination is foreign:checker/),
    ]);
    expect(await refusals("wrong_sender")).toBe(3);
    expect(await snapshot(ext.taskId)).toEqual(before.ext);
    expect(await snapshot(one.taskId)).toEqual(before.one);

    // The gateway for the step's own agent and attempt moves its due time (unaudited, like a worker's heartbeat).
    await publishSigned(rt, GATEWAY_SENDER, [heartbeat(ext.taskId, "f", "checker")]);
    const dueOf = async () => Number((await snapshot(ext.taskId)).steps[0]!.due_at_ms);
    const was = Number(before.ext.steps[0]!.due_at_ms);
    await waitFor(async () => (await dueOf()) > was || undefined, { what: "the gateway's heartbeat to move the due time" });
    expect((await snapshot(ext.taskId)).audit).toEqual(before.ext.audit);
    expect((await rt.bus.listDeadLetters(COORDINATOR_STREAM)).length).toBe(3);
  });

  it("an envelope without a MAC, with a MAC that does not verify, or under an unknown key, changes nothing", async () => {
    const { taskId } = await rt.tasks.start({ orgId: ACME, workflow: "one" });
    const before = await snapshot(taskId);
    // Unsigned, as any process with Redis access could write it.
    await rt.bus.publish([{ stream: COORDINATOR_STREAM, envelope: result(ACME, taskId, "a") }]);
    // Signed by the writer, then its payload altered on the way.
    const signed = rt.busAuth.signer("role:writer").sign(result(ACME, taskId, "a", { payload: jsonPayload({ verdict: "good" }) }));
    const tampered = Buffer.from(signed.buffer, signed.byteOffset, signed.byteLength).toString("latin1").replace("good", "evil");
    await rt.bus.publishEncoded([{ stream: COORDINATOR_STREAM, data: Buffer.from(tampered, "latin1") }]);
    // A key derived from a secret the coordinator does not hold.
    const stranger = new BusAuth({ secrets: parseBusSecrets("other:an-entirely-different-secret-of-32-bytes"), maxPayloadBytes: rt.config.bus.maxPayloadBytes });
    await rt.bus.publishEncoded([{ stream: COORDINATOR_STREAM, data: stranger.signer("role:writer").sign(result(ACME, taskId, "a")) }]);
    // The right key id, the wrong secret.
    const impostor = new BusAuth({ secrets: parseBusSecrets("test:not-the-test-secret-but-as-long-as-it"), maxPayloadBytes: rt.config.bus.maxPayloadBytes });
    await rt.bus.publishEncoded([{ stream: COORDINATOR_STREAM, data: impostor.signer("role:writer").sign(result(ACME, taskId, "a")) }]);
    const letters = await deadLetters(4);
    await inboxSettled();
    expect(letters.map((l) => l.reason).sort()).toEqual([
      "UNAUTHENTICATED: bus key id \"other\" is not accepted here",
      "UNAUTHENTICATED: the bus MAC does not verify for role:writer",
      "UNAUTHENTICATED: the bus MAC does not verify for role:writer",
      "UNAUTHENTICATED: the envelope carries no bus MAC",
    ]);
    expect([await refusals("no_mac"), await refusals("bad_mac"), await refusals("unknown_key")]).toEqual([1, 2, 1]);
    expect(await snapshot(taskId)).toEqual(before);
    // Replaying the dead letters changes nothing either: they are refused again.
    await rt.bus.replayDeadLetters(COORDINATOR_STREAM, letters.map((l) => l.id));
    await deadLetters(4);
    await inboxSettled();
    expect(await snapshot(taskId)).toEqual(before);
  });

  it("an envelope for a tenant that does not exist is dead-lettered, not held", async () => {
    const { taskId } = await rt.tasks.start({ orgId: ACME, workflow: "one" });
    const before = await snapshot(taskId);
    // `ghost` is switched off like any tenant not on the list, so today its entries would be held for it.
    await publishSigned(rt, "role:writer", [result("ghost", taskId, "a"), result("ghost", crypto.randomUUID(), "a")]);
    const letters = await deadLetters(2);
    await inboxSettled();
    expect(letters.map((l) => l.reason).sort()).toEqual([
      expect.stringMatching(/^REFUSED: task .* is not a task of tenant ghost: not held/),
      expect.stringMatching(/^REFUSED: tenant ghost has no task .* \(unknown tenant or task\): not held/),
    ]);
    expect((await rt.bus.stats(heldStreamName("ghost"), COORDINATOR_GROUP)).length).toBe(0);
    expect(await refusals("tenant_mismatch")).toBe(1);
    expect(await refusals("unknown_task")).toBe(1);
    expect(await snapshot(taskId)).toEqual(before);
  });

  it("a QUERY that claims depth 8 from a depth-0 step still gets its REPLY: the depth comes from the step record", async () => {
    workers.start("helper", async () => ({ helped: true }));
    const { taskId } = await rt.tasks.start({ orgId: ACME, workflow: "one" });
    await rt.bus.ensureGroup("role:writer", "observer");
    const query = createEnvelope({
      id: crypto.randomUUID(),
      orgId: ACME,
      taskId,
      stepId: "a",
      attempt: 1,
      kind: EnvelopeKind.QUERY,
      source: { kind: EndpointKind.ROLE, id: "writer" },
      destination: { kind: EndpointKind.ROLE, id: "helper" },
      replyTo: { taskId, stepId: "a", attempt: 1 },
      correlationId: "c-1",
      delegationDepth: 8,
      payload: jsonPayload({ query: { ask: 1 }, state: null, turn: 0 }),
    });
    await publishSigned(rt, "role:writer", [query]);
    const reply = await waitFor(
      async () => {
        const entries = await rt.bus.read({ stream: "role:writer", group: "observer", consumer: "o", count: 10, blockMs: 100 });
        return entries.find((e) => e.envelope.kind === EnvelopeKind.REPLY)?.envelope;
      },
      { what: "the REPLY to the delegating step" },
    );
    expect(reply).toMatchObject({ stepId: "a", correlationId: "c-1", delegationDepth: 1, sourceStepId: "a.d1", status: ResultStatus.OK });
    const { rows } = await rt.pool.query("SELECT depth FROM steps WHERE task_id = $1 AND step_id = 'a.d1'", [taskId]);
    expect(rows[0].depth).toBe(1);
    expect((await rt.metrics.delegationDepthExceeded.get()).values[0]?.value ?? 0).toBe(0);
  });

  it("a forgery reusing a genuine envelope's id in the same batch does not shadow it", async () => {
    const { taskId } = await rt.tasks.start({ orgId: ACME, workflow: "one" });
    const genuine = result(ACME, taskId, "a");
    const input = (endpoint: string) => ({ ...envelopeToEvent(genuine, { kind: "queue", endpoint }), dedupe: true });
    // Straight into the engine, so both are certainly in one batch; the forgery first.
    const applied = await rt.engine.apply(rt.pool, [input("role:reader"), input("role:writer")]);
    expect(applied.refused.map((r) => r.label)).toEqual(["wrong_sender"]);
    expect(applied.applied).toBe(1);
    expect((await rt.tasks.get(ACME, taskId)).status).toBe("completed");
    // And its id now counts as processed: a redelivery changes nothing.
    expect((await rt.engine.apply(rt.pool, [input("role:writer")])).duplicates).toBe(1);
  });
});

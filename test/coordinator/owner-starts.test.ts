/**
 * Task starts through the shard owner (issue 11 §2): a start writes the task, its pending steps and one signed
 * `task_started` envelope for the tenant's inbox in one transaction, with no engine run and no audit row; one bad
 * request fails alone in its batch; the owner applies the envelope once however often it is published; only the
 * gateway identity may send one (a harness's is dead-lettered).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { GATEWAY_SENDER } from "../../src/bus/auth/bus-keys.js";
import { EndpointKind, createEnvelope, decodeEnvelope, type Envelope } from "../../src/bus/codec.js";
import { streamKey } from "../../src/bus/keys.js";
import { COORDINATOR_GROUP } from "../../src/coordinator/coordinator.js";
import { envelopeToEvent } from "../../src/coordinator/envelopes.js";
import { inboxOf } from "../../src/bus/shards.js";
import { createStartEnvelope, startEnvelopeId } from "../../src/tasks/start-envelope.js";
import { TaskService } from "../../src/tasks/tasks.js";
import { listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, waitFor, type TestRuntime } from "../support/runtime.js";

const ACME = "acme";
const MAX = 1 << 20;

describe("task starts through the shard owner", () => {
  let rt: TestRuntime;
  let owner: (publish: boolean) => TaskService;

  beforeEach(async () => {
    rt = await createTestRuntime();
    await submitWorkflow(rt.pool, ACME, parseWorkflowDefinition('name: two\nsteps:\n  - { id: a, to: "role:writer", timeout: 10m }\n  - { id: b, to: "role:writer", needs: [a], timeout: 10m }\n'));
    owner = (publish) =>
      new TaskService({
        pool: rt.pool,
        engine: rt.engine,
        approvals: rt.stores.approvals,
        tasks: rt.stores.tasks,
        replies: rt.stores.replies,
        ...(publish ? { publisher: rt.publisher } : {}),
        maxPayloadBytes: 1000,
        owner: { signer: rt.busAuth.signer(GATEWAY_SENDER), shardCount: rt.config.shards.count },
      });
  });
  afterEach(async () => {
    await rt.cleanup();
  });

  async function outbox() {
    const { rows } = await rt.pool.query<{ stream: string; envelope_id: string; envelope: Buffer }>("SELECT stream, envelope_id, envelope FROM outbox ORDER BY id");
    return rows;
  }

  async function audit() {
    return (await rt.pool.query("SELECT count(*)::int AS n FROM audit_log")).rows[0].n as number;
  }

  it("writes the task, its pending steps and one signed start envelope; no engine run, no audit row; a reused key writes nothing", async () => {
    const tasks = owner(false);
    const first = await tasks.start({ orgId: ACME, workflow: "two", input: { n: 1 }, idempotencyKey: "k1" });
    expect(first).toMatchObject({ created: true, workflow: "two@1" });
    expect(first.view).toMatchObject({ id: first.taskId, status: "running", steps: [{ id: "a", status: "pending" }, { id: "b", status: "pending" }] });
    // The answer is what a read gives back.
    expect(await tasks.get(ACME, first.taskId)).toEqual(first.view);
    expect(await audit()).toBe(0);

    const [row, ...more] = await outbox();
    expect(more).toEqual([]);
    expect(row!.stream).toBe(inboxOf(ACME, rt.config.shards.count));
    expect(row!.envelope_id).toBe(startEnvelopeId(first.taskId));
    const bytes = new Uint8Array(row!.envelope);
    const envelope = decodeEnvelope(bytes, MAX);
    const verdict = rt.busAuth.verifier().verify(bytes, envelope);
    expect(verdict).toEqual({ ok: true, sender: { kind: "starter", identity: GATEWAY_SENDER } });
    if (!verdict.ok) return;
    expect(envelopeToEvent(envelope, verdict.sender)).toEqual({ orgId: ACME, taskId: first.taskId, event: { type: "task_started", eventId: `start:${first.taskId}` } });

    const again = await tasks.start({ orgId: ACME, workflow: "two", input: { n: 2 }, idempotencyKey: "k1" });
    expect(again).toEqual({ taskId: first.taskId, created: false, workflow: "two@1" });
    expect(await outbox()).toHaveLength(1);
  });

  it("answers each request of a batch with its own outcome: a bad one fails alone", async () => {
    const settled = await owner(false).startEach(ACME, [
      { orgId: ACME, workflow: "two", idempotencyKey: "same" },
      { orgId: ACME, workflow: "missing" },
      { orgId: ACME, workflow: "two", input: { big: "x".repeat(2000) } },
      { orgId: ACME, workflow: "two", replyTo: { kind: "nonsense" } as never },
      { orgId: ACME, workflow: "two", idempotencyKey: "same" },
      { orgId: ACME, workflow: "two" },
    ]);
    expect(settled.map((s) => (s.ok ? (s.started.created ? "created" : "reused") : s.error.code))).toEqual([
      "created",
      "NOT_FOUND",
      "PAYLOAD_TOO_LARGE",
      "INVALID_ARGUMENT",
      "reused",
      "created",
    ]);
    const ids = settled.flatMap((s) => (s.ok ? [s.started.taskId] : []));
    expect(ids[0]).toBe(ids[1]);
    const created = (await rt.pool.query<{ created_at: Date }>("SELECT created_at FROM tasks")).rows;
    expect(created).toHaveLength(2);
    // One transaction: both rows carry its start time.
    expect(new Set(created.map((r) => r.created_at.getTime())).size).toBe(1);
    expect((await outbox()).map((r) => r.envelope_id).sort()).toEqual([startEnvelopeId(ids[0]!), startEnvelopeId(ids[2]!)].sort());
  });

  it("publishes to the tenant's inbox; the owner dispatches once however often the start is published", async () => {
    const { taskId } = await owner(true).start({ orgId: ACME, workflow: "two" });
    expect(await outbox()).toEqual([]);
    const entries = await rt.redis.xrangeBuffer(streamKey(rt.prefix, inboxOf(ACME, rt.config.shards.count)), "-", "+");
    expect(entries).toHaveLength(1);
    // The owner's intake dedupes by event id: a second publication (the relay after a publish that did land) and
    // the inline path's own start are one event.
    const input = { orgId: ACME, taskId, event: { type: "task_started" as const, eventId: `start:${taskId}` }, dedupe: true };
    const first = await rt.engine.apply(rt.pool, [input]);
    const second = await rt.engine.apply(rt.pool, [input]);
    expect([first.applied, second.duplicates]).toEqual([1, 1]);
    expect((await listAudit(rt.pool, ACME, { taskId })).map((a) => [a.action, a.destination])).toEqual([["dispatch", "role:writer"]]);
    expect((await rt.tasks.get(ACME, taskId)).steps.map((s) => s.status)).toEqual(["dispatched", "pending"]);
  });

  it("the coordinator owning the shard applies a start signed as the gateway and dead-letters one signed by a harness", async () => {
    const { taskId } = await owner(false).start({ orgId: ACME, workflow: "two" });
    rt.startCoordinator();
    const inbox = inboxOf(ACME, rt.config.shards.count);
    const publish = (sender: string, envelopes: Envelope[]) => rt.bus.publishEncoded(envelopes.map((e) => ({ stream: inbox, data: rt.busAuth.signer(sender).sign(e) })));
    const start = createStartEnvelope(ACME, taskId, Date.now());
    await publish("role:writer", [start]);
    const [letter] = await waitFor(async () => {
      const letters = await rt.bus.listDeadLetters(inbox);
      return letters.length > 0 ? letters : undefined;
    }, { what: "the harness's start to be dead-lettered" });
    expect(letter!.reason).toMatch(/^MALFORMED_ENVELOPE: a task start from role:writer: only the gateway starts tasks/);
    expect((await rt.tasks.get(ACME, taskId)).steps.map((s) => s.status)).toEqual(["pending", "pending"]);
    expect(await audit()).toBe(0);

    // The gateway's, twice (a second publication): one dispatch.
    await publish(GATEWAY_SENDER, [start, start]);
    await waitFor(async () => (await rt.tasks.get(ACME, taskId)).steps[0]!.status === "dispatched" || undefined, { what: "the start to apply" });
    await waitFor(async () => (await rt.bus.stats(inbox, COORDINATOR_GROUP)).pending === 0 || undefined, { what: "the inbox to be drained" });
    expect((await listAudit(rt.pool, ACME, { taskId })).map((a) => a.action)).toEqual(["dispatch"]);
    expect(await rt.bus.listDeadLetters(inbox)).toHaveLength(1);
  });

  it("the verifier refuses a gateway start that names a source, and the gateway identity sends only starts or FOREIGN envelopes", async () => {
    const verify = (sender: string, envelope: ReturnType<typeof createStartEnvelope>) => {
      const bytes = rt.busAuth.signer(sender).sign(envelope);
      return rt.busAuth.verifier().verify(bytes, decodeEnvelope(bytes, MAX));
    };
    const start = createStartEnvelope(ACME, crypto.randomUUID(), Date.now());
    const sourced = createEnvelope({ id: start.id, orgId: ACME, taskId: start.taskId, kind: start.kind, payload: start.payload, source: { kind: EndpointKind.ROLE, id: "writer" } });
    expect(verify(GATEWAY_SENDER, sourced)).toMatchObject({ ok: false, reason: "source_mismatch" });
    // A harness's start passes the MAC as its queue: the event mapping refuses it (above).
    expect(verify("role:writer", start)).toEqual({ ok: true, sender: { kind: "queue", endpoint: "role:writer" } });
  });
});

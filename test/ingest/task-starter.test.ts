/**
 * The batched starter: concurrent deliveries of one tenant share one transaction, a repeated delivery id inside
 * one batch names the same task, and a delivery whose workflow is missing fails alone.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBatchedTaskStarter, type DeliveryStart } from "../../src/ingest/task-starter.js";
import { createIngestEndpoint } from "../../src/ingest/endpoint-store.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { createTenant } from "../../src/tenancy/tenants.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { WORKFLOW } from "./support.js";

describe("createBatchedTaskStarter", () => {
  let rt: TestRuntime;
  let endpointId: string;
  beforeAll(async () => {
    rt = await createTestRuntime();
    await createTenant(rt.stores.tenants, rt.pool, { orgId: "acme", name: "acme" });
    await submitWorkflow(rt.pool, "acme", parseWorkflowDefinition(WORKFLOW));
    endpointId = (await createIngestEndpoint(rt.stores.ingestEndpoints, rt.pool, undefined, "acme", { source: "generic", workflow: "triage" })).endpoint.id;
  });
  afterAll(async () => {
    await rt?.cleanup();
  });

  const item = (delivery: string, workflow = "triage"): DeliveryStart => ({
    request: { orgId: "acme", workflow, input: { delivery }, idempotencyKey: `ingest:${endpointId}:${delivery}` },
    delivery: { endpointId, deliveryId: delivery, orgId: "acme", event: "generic", bodySha256: `sha-of-${delivery}` },
  });

  it("starts a burst together; a repeated id is one task; a missing workflow fails only its own delivery", async () => {
    const batches: number[] = [];
    const starter = createBatchedTaskStarter({
      startsThroughOwner: false,
      startEach: (orgId, requests, options) => {
        batches.push(requests.length);
        return rt.tasks.startEach(orgId, requests, options);
      },
    }, { deliveries: rt.stores.ingestDeliveries });
    const outcomes = await Promise.allSettled([item("d1"), item("d2"), item("d2"), item("d3", "missing"), item("d4")].map((i) => starter.start(i)));
    const [d1, d2, d2again, d3, d4] = outcomes;
    expect(d1).toMatchObject({ status: "fulfilled", value: { created: true } });
    expect(d2).toMatchObject({ status: "fulfilled", value: { created: true } });
    expect(d2again).toMatchObject({ status: "fulfilled", value: { created: false } });
    expect((d2again as PromiseFulfilledResult<{ taskId: string }>).value.taskId).toBe((d2 as PromiseFulfilledResult<{ taskId: string }>).value.taskId);
    expect(d3).toMatchObject({ status: "rejected", reason: { code: "NOT_FOUND" } });
    expect(d4).toMatchObject({ status: "fulfilled", value: { created: true } });
    // More than one delivery went into some transaction (the first runs alone, the rest queue behind it).
    expect(Math.max(...batches)).toBeGreaterThan(1);
    // The missing workflow failed inside its batch: no batch was re-run item by item.
    expect(batches.reduce((a, b) => a + b, 0)).toBe(5);
    const { rows } = await rt.pool.query("SELECT delivery_id, cause, task_id, body_sha256 FROM ingest_deliveries ORDER BY delivery_id");
    expect(rows.map((r) => r.delivery_id)).toEqual(["d1", "d2", "d4"]);
    expect(rows.map((r) => r.body_sha256)).toEqual(["sha-of-d1", "sha-of-d2", "sha-of-d4"]);
    const tasks = await rt.pool.query("SELECT count(*)::int AS n FROM tasks");
    expect(tasks.rows[0].n).toBe(3);
    const steps = await rt.pool.query("SELECT count(*)::int AS n FROM steps");
    expect(steps.rows[0].n).toBe(3);
  });
});

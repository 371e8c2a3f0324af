/**
 * The Prometheus registry after a real workflow ran through a coordinator and a harness: scrape-time gauges show
 * the state (a parked approval, queues, budget, audit head, flags, outbox) and the event counters moved.
 */
import type { Redis } from "ioredis";
import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Bus } from "../../src/bus/bus.js";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { listApprovals } from "../../src/store/approvals/postgres-approval-store.js";
import { inboxOf } from "../../src/bus/shards.js";
import { createHarness, type Harness } from "../../src/harness/index.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import { collectMetrics } from "../../src/metrics/collect.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, waitFor, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { parseSamples, sampleValue } from "./prometheus.js";
import { createPostgresMetricStore } from "../../src/store/metrics/postgres-metric-store.js";

const ORG = "acme";

describe("collectMetrics after a workflow", () => {
  let rt: TestRuntime;
  let bus: Bus;
  let harness: Harness | undefined;
  beforeEach(async () => {
    rt = await createTestRuntime();
    // A bus that counts its own dead letters; the runtime's does not get the metrics yet.
    bus = createRedisBus({ redis: rt.redis, keyPrefix: rt.prefix, maxPayloadBytes: rt.config.bus.maxPayloadBytes, maxDeliveries: rt.config.bus.maxDeliveries, metrics: rt.metrics });
  });
  afterEach(async () => {
    await harness?.close();
    await bus.close();
    await rt.cleanup();
  });

  it("reports parked approvals, queues, budgets, audit heads, flags, outbox age and the counters", async () => {
    collectMetrics(rt.metrics, { pool: rt.pool, store: createPostgresMetricStore(), bus: rt.bus, redis: rt.redis, keyPrefix: rt.prefix, discoverEveryMs: 0 });
    const scrape = async () => parseSamples(await rt.metrics.registry.metrics());

    await rt.pool.query("INSERT INTO tenants (org_id, name, daily_budget) VALUES ($1, 'Acme', 50)", [ORG]);
    await rt.pool.query("INSERT INTO flags (name, scope_kind, scope, enabled, updated_by, reason) VALUES ('BUS_ROUTED', 'role', 'researcher', false, 'user:sre', 'test')");
    await submitWorkflow(
      rt.pool,
      ORG,
      parseWorkflowDefinition(`
name: gated
steps:
  - { id: draft, to: "role:echo", cost_estimate: 2 }
  - { id: publish, to: "role:echo", approval: true, cost_estimate: 1 }
`),
    );
    const coordinator = rt.startCoordinator();
    harness = createHarness({
      bus,
      role: "echo",
      signer: rt.busAuth.signer("role:echo"),
      handler: async (_work, ctx) => {
        ctx.usage({ cost: 1.5 });
        return "ok";
      },
      maxPayloadBytes: rt.config.bus.maxPayloadBytes,
      reclaimIdleMs: rt.config.bus.reclaimIdleMs,
      heartbeatMs: rt.config.harness.heartbeatMs,
      shutdownGraceMs: rt.config.harness.shutdownGraceMs,
      blockMs: 100,
      flags: rt.flags,
      metrics: rt.metrics,
    });
    void harness.start();

    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "gated" });
    const approval = await waitFor(async () => (await listApprovals(rt.pool, ORG, { status: "pending", taskId }))[0], { what: "the approval" });

    // A garbage entry on the harness's stream: the bus dead-letters it when the harness reads it.
    await rt.redis.xadd(`${rt.prefix}{role:echo}`, "*", "e", "not protobuf");
    await waitFor(async () => (await bus.stats("role:echo", "harness")).deadLetters === 1, { what: "the dead letter" });

    const parked = await scrape();
    expect(sampleValue(parked, "switchyard_approvals_pending", { tenant: ORG })).toBe(1);
    expect(sampleValue(parked, "switchyard_hops_total", { action: "dispatch", verdict: "allow" })).toBe(1);
    expect(sampleValue(parked, "switchyard_hops_total", { action: "dispatch", verdict: "requires_approval" })).toBe(1);
    expect(sampleValue(parked, "switchyard_harness_turns_total", { stream: "role:echo", outcome: "completed" })).toBe(1);
    expect(sampleValue(parked, "switchyard_dead_letters_total", { stream: "role:echo", reason: "MALFORMED_ENVELOPE" })).toBe(1);
    expect(sampleValue(parked, "switchyard_dead_letter_queue_length", { stream: "role:echo" })).toBe(1);
    // The WORK entry stays on the stream (acknowledged, trimmed later); the garbage one too (dead-lettered and acked).
    expect(sampleValue(parked, "switchyard_queue_length", { stream: "role:echo" })).toBe(2);
    expect(sampleValue(parked, "switchyard_queue_pending", { stream: "role:echo" })).toBe(0);
    // The worker's RESULT went to the inbox of the tenant's shard, which the WORK named.
    const inbox = inboxOf(ORG, rt.config.shards.count);
    expect(sampleValue(parked, "switchyard_queue_length", { stream: inbox })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(parked, "switchyard_queue_pending", { stream: inbox })).toBe(0);
    // draft's actual 1.5 plus the 1 reserved for publish at the approval hop.
    const dailyCost = sampleValue(parked, "switchyard_tenant_daily_cost", { tenant: ORG });
    const stored = await rt.pool.query("SELECT sum(cost)::float8 AS cost FROM tenant_daily_cost WHERE org_id = $1", [ORG]);
    expect(dailyCost).toBeGreaterThan(0);
    expect(dailyCost).toBeCloseTo(stored.rows[0].cost);
    expect(sampleValue(parked, "switchyard_tenant_daily_budget", { tenant: ORG })).toBe(50);
    const head = await rt.pool.query("SELECT seq FROM audit_heads WHERE org_id = $1", [ORG]);
    expect(sampleValue(parked, "switchyard_audit_head_seq", { tenant: ORG })).toBe(Number(head.rows[0].seq));
    expect(sampleValue(parked, "switchyard_audit_checkpoint_seq", { tenant: ORG })).toBe(0);
    expect(sampleValue(parked, "switchyard_flag_enabled", { name: "BUS_ROUTED", scope_kind: "role", scope: "researcher" })).toBe(0);
    expect(sampleValue(parked, "switchyard_outbox_rows")).toBe(0);
    expect(sampleValue(parked, "switchyard_outbox_oldest_age_seconds")).toBe(0);
    expect(sampleValue(parked, "switchyard_audit_append_seconds_count")).toBeGreaterThanOrEqual(2);
    expect(sampleValue(parked, "switchyard_outbox_lag_seconds_count")).toBeGreaterThanOrEqual(1);
    expect(sampleValue(parked, "switchyard_metrics_collect_errors_total")).toBeUndefined();

    await rt.tasks.decideApproval({ orgId: ORG, approvalId: approval.id, approve: true, actor: "user:ann" });
    await waitForTask(rt.tasks, ORG, taskId, { until: (t) => t.status === "completed" });
    const done = await scrape();
    // Seen once, so it drops to 0 rather than vanishing.
    expect(sampleValue(done, "switchyard_approvals_pending", { tenant: ORG })).toBe(0);
    expect(sampleValue(done, "switchyard_harness_turns_total", { stream: "role:echo", outcome: "completed" })).toBe(2);
    expect(sampleValue(done, "switchyard_hops_total", { action: "dispatch", verdict: "allow" })).toBe(2);

    // Outbox age: an unpublished row from 30 seconds ago (the relay would publish it, so stop the coordinator first).
    await coordinator.close();
    await rt.pool.query("INSERT INTO outbox (org_id, stream, envelope_id, envelope, created_at) VALUES ($1, 'role:echo', 'stuck', '\\x00', now() - interval '30 seconds')", [ORG]);
    const stuck = await scrape();
    expect(sampleValue(stuck, "switchyard_outbox_rows")).toBe(1);
    expect(sampleValue(stuck, "switchyard_outbox_oldest_age_seconds")).toBeGreaterThanOrEqual(30);
  });
});

describe("collectMetrics sources", () => {
  it("keeps scraping when a source fails, counting the failure, and reads flags from the given source", async () => {
    const metrics = createMetrics();
    const failingBus = { stats: async () => Promise.reject(new Error("redis is down")) } as unknown as Bus;
    const pool = { query: async () => Promise.reject(new Error("postgres is down")) } as never;
    const collectors = collectMetrics(metrics, {
      pool,
      store: createPostgresMetricStore(),
      bus: failingBus,
      streams: ["role:a"],
      flags: () => [{ name: "HARNESS_ENABLED", scopeKind: "role", scope: "a", enabled: true }],
    });
    const samples = parseSamples(await metrics.registry.metrics());
    expect(sampleValue(samples, "switchyard_flag_enabled", { name: "HARNESS_ENABLED", scope_kind: "role", scope: "a" })).toBe(1);
    expect(sampleValue(samples, "switchyard_metrics_collect_errors_total", { source: "queues" })).toBe(1);
    expect(sampleValue(samples, "switchyard_metrics_collect_errors_total", { source: "approvals" })).toBe(1);
    expect(sampleValue(samples, "switchyard_metrics_collect_errors_total", { source: "outbox" })).toBe(1);
    expect(samples.some((s) => s.name === "switchyard_queue_length")).toBe(false);

    // While Redis reconnects, the queue gauges are skipped at once rather than waiting for it (a scrape would hang).
    const hangingBus = { stats: () => new Promise(() => {}) } as unknown as Bus;
    const reconnecting = { status: "reconnecting" } as unknown as Redis;
    const during = createMetrics();
    collectMetrics(during, { pool, store: createPostgresMetricStore(), bus: hangingBus, redis: reconnecting, streams: ["role:a"], flags: () => [] });
    const scraped = parseSamples(await during.registry.metrics());
    expect(sampleValue(scraped, "switchyard_metrics_collect_errors_total", { source: "queues" })).toBe(1);

    // A bare registry works too, and unregister removes the gauges.
    collectors.unregister();
    expect(metrics.registry.getSingleMetric("switchyard_queue_length")).toBeUndefined();
    const bare = new Registry();
    collectMetrics(bare, { pool, store: createPostgresMetricStore(), bus: failingBus, flags: () => [] });
    expect(bare.getSingleMetric("switchyard_approvals_pending")).toBeDefined();
  });
});

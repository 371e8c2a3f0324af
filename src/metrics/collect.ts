/**
 * Gauges read at scrape time: each has a `collect()` that queries Redis or Postgres when Prometheus scrapes,
 * so the values are current whichever process serves `/metrics` and nothing polls in between.
 *
 * A source that fails (Redis down, a query error) leaves its gauges empty for that scrape and counts
 * `switchyard_metrics_collect_errors_total{source}`; the scrape itself still succeeds. Per-tenant and
 * per-stream series that were seen once stay at 0 when their rows disappear (no pending approvals any more),
 * so alerts and graphs see a drop to zero rather than a vanishing series.
 */
import type { DependencyHealth } from "../process/dependency-health.js";
import { Counter, Gauge, type Registry } from "prom-client";
import type { RedisClient } from "../bus/redis-connection.js";
import { COORDINATOR_STREAM, type Bus } from "../bus/bus.js";
import { isInboxStream } from "../bus/shards.js";
import { COORDINATOR_GROUP } from "../coordinator/coordinator.js";
import { costDay } from "../domain.js";
import { HARNESS_GROUP } from "../harness/harness.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Metrics } from "./metrics.js";
import type { Queryable } from "../store/db.js";
import type { FlagValue, MetricStore, TenantValue } from "../store/metrics/metric-store.js";
import { discoverStreams } from "../bus/stream-discovery.js";

export type { FlagValue } from "../store/metrics/metric-store.js";

export interface CollectDeps {
  /** Postgres, as the owner (tenant rows of every tenant are counted). */
  pool: Queryable;
  /** What the Postgres gauges read (`stores.metricReads`). */
  store: MetricStore;
  bus: Bus;
  /**
   * The streams to report. Default: every stream under `keyPrefix` (SCAN, when `redis` is given, re-scanned at
   * most every `discoverEveryMs`), plus the coordinator inbox.
   */
  streams?: readonly string[] | (() => Promise<readonly string[]>);
  redis?: RedisClient;
  keyPrefix?: string;
  /** @defaultValue 15 000 */
  discoverEveryMs?: number;
  /** A source that fails because Postgres or Redis is down is recorded here (logged once per outage), not logged per scrape. */
  health?: DependencyHealth;
  /** Live flag values. Default: the rows of the `flags` table (flags never set keep their environment default and are not reported). */
  flags?: () => Promise<readonly FlagValue[]> | readonly FlagValue[];
  /** @defaultValue Date.now */
  clock?: () => number;
  logger?: Logger;
}

export interface MetricCollectors {
  /** Removes the gauges from the registry (e.g. before collecting again with other deps). */
  unregister(): void;
}

/**
 * Registers the scrape-time gauges on the registry (of `Metrics`, or a bare one). Call once per registry.
 *
 * | metric | labels | from |
 * | --- | --- | --- |
 * | switchyard_queue_length | stream | XLEN |
 * | switchyard_queue_pending | stream | XPENDING of the stream's consumer group (coordinator / harness) |
 * | switchyard_dead_letter_queue_length | stream | XLEN of the dead-letter stream |
 * | switchyard_approvals_pending | tenant | approvals with status pending |
 * | switchyard_flag_enabled | name, scope_kind, scope | flags (1 on, 0 off) |
 * | switchyard_tenant_daily_cost | tenant | tenant_daily_cost for today (UTC) |
 * | switchyard_tenant_daily_budget | tenant | tenants.daily_budget (tenants with a budget) |
 * | switchyard_outbox_rows | — | outbox rows not yet published |
 * | switchyard_outbox_oldest_age_seconds | — | age of the oldest outbox row (0 when empty) |
 * | switchyard_audit_head_seq | tenant | audit_heads.seq |
 * | switchyard_audit_checkpoint_seq | tenant | seq of the newest signed checkpoint (0 when none) |
 */
export function collectMetrics(target: Metrics | Registry, deps: CollectDeps): MetricCollectors {
  const registry = "registry" in target ? target.registry : target;
  const registers = [registry];
  const clock = deps.clock ?? Date.now;
  const logger = (deps.logger ?? silentLogger).child({ component: "metrics" });
  const failures = new Map<string, number>();
  const running = new Set<Promise<void>>();
  const { store } = deps;

  /** Runs a source; a failure is logged and counted, and its gauges stay empty this scrape. Never rejects. */
  function guarded(source: string, gauges: readonly Gauge<string>[], work: () => Promise<void>): Promise<void> {
    const done = work().catch((error: unknown) => {
      for (const gauge of gauges) gauge.reset();
      failures.set(source, (failures.get(source) ?? 0) + 1);
      if (!deps.health?.absorb(error)) logger.warn({ err: error, source }, "metric source failed at scrape");
    });
    running.add(done);
    void done.finally(() => running.delete(done));
    return done;
  }

  // --- queues: one pass over the streams feeds three gauges; concurrent collects share it.
  const queueLength = new Gauge({ name: "switchyard_queue_length", help: "Entries in a stream", labelNames: ["stream"], registers, collect: () => refreshQueues() });
  const queuePending = new Gauge({ name: "switchyard_queue_pending", help: "Delivered but unacknowledged entries in a stream (its consumer group)", labelNames: ["stream"], registers, collect: () => refreshQueues() });
  const deadLetters = new Gauge({ name: "switchyard_dead_letter_queue_length", help: "Entries in a stream's dead-letter stream", labelNames: ["stream"], registers, collect: () => refreshQueues() });
  const queueGauges = [queueLength, queuePending, deadLetters];
  const queueSeen = new Set<string>();
  let queueRefresh: Promise<void> | undefined;
  let discovered: { at: number; streams: readonly string[] } | undefined;

  async function streamsToReport(): Promise<readonly string[]> {
    if (typeof deps.streams === "function") return deps.streams();
    if (deps.streams) return deps.streams;
    if (!deps.redis || deps.keyPrefix === undefined) return [COORDINATOR_STREAM];
    const now = clock();
    if (!discovered || now - discovered.at >= (deps.discoverEveryMs ?? 15_000)) {
      const found = await discoverStreams(deps.redis, deps.keyPrefix);
      discovered = { at: now, streams: [...new Set([COORDINATOR_STREAM, ...found])].sort() };
    }
    return discovered.streams;
  }

  function refreshQueues(): Promise<void> {
    queueRefresh ??= guarded("queues", queueGauges, async () => {
      // Commands wait in ioredis's queue while it reconnects: a scrape during a Redis outage would hang until
      // Redis is back, and with it every other metric (the outage counters among them). Skip the queues instead.
      if (deps.redis && deps.redis.status !== "ready") throw new Error(`Connection is closed (Redis is ${deps.redis.status}); queue gauges skipped`);
      const streams = await streamsToReport();
      const stats = await Promise.all(streams.map(async (stream) => ({ stream, ...(await deps.bus.stats(stream, isInboxStream(stream) ? COORDINATOR_GROUP : HARNESS_GROUP)) })));
      const keys = new Set(streams);
      for (const gauge of queueGauges) gauge.reset();
      for (const s of stats) {
        queueLength.set({ stream: s.stream }, s.length);
        queuePending.set({ stream: s.stream }, s.pending);
        deadLetters.set({ stream: s.stream }, s.deadLetters);
        queueSeen.add(s.stream);
      }
      for (const stream of queueSeen) if (!keys.has(stream)) for (const gauge of queueGauges) gauge.set({ stream }, 0);
    }).finally(() => {
      queueRefresh = undefined;
    });
    return queueRefresh;
  }

  // --- one query per gauge (or pair of gauges).
  const perTenant = (name: string, help: string, source: string, query: () => Promise<readonly TenantValue[]>): Gauge<string> => {
    const seen = new Set<string>();
    const gauge: Gauge<string> = new Gauge({
      name,
      help,
      labelNames: ["tenant"],
      registers,
      collect: () =>
        guarded(source, [gauge], async () => {
          const rows = await query();
          gauge.reset();
          for (const r of rows) {
            gauge.set({ tenant: r.tenant }, r.value);
            seen.add(r.tenant);
          }
          const now = new Set(rows.map((r) => r.tenant));
          for (const tenant of seen) if (!now.has(tenant)) gauge.set({ tenant }, 0);
        }),
    });
    return gauge;
  };

  perTenant("switchyard_approvals_pending", "Approvals waiting for a decision", "approvals", () => store.approvalsPending(deps.pool));
  perTenant("switchyard_tenant_daily_cost", "Cost accrued today (UTC), in the tenant's cost units", "budgets", () => store.dailyCost(deps.pool, costDay(clock())));
  perTenant("switchyard_tenant_daily_budget", "The tenant's daily budget (tenants that have one)", "budgets", () => store.dailyBudgets(deps.pool));
  perTenant("switchyard_audit_head_seq", "Seq of the tenant's audit chain head", "audit", () => store.auditHeadSeqs(deps.pool));
  perTenant("switchyard_audit_checkpoint_seq", "Seq of the tenant's newest signed audit checkpoint", "audit", () => store.auditCheckpointSeqs(deps.pool));

  const flags: Gauge<string> = new Gauge({
    name: "switchyard_flag_enabled",
    help: "Live flag values (1 on, 0 off) by flag name and scope",
    labelNames: ["name", "scope_kind", "scope"],
    registers,
    collect: () =>
      guarded("flags", [flags], async () => {
        const values = deps.flags ? await deps.flags() : await store.flags(deps.pool);
        flags.reset();
        for (const f of values) flags.set({ name: f.name, scope_kind: f.scopeKind, scope: f.scope }, f.enabled ? 1 : 0);
      }),
  });

  const outboxRows: Gauge<string> = new Gauge({ name: "switchyard_outbox_rows", help: "Outbox rows committed but not yet published", registers, collect: () => refreshOutbox() });
  const outboxAge: Gauge<string> = new Gauge({
    name: "switchyard_outbox_oldest_age_seconds",
    help: "Age of the oldest unpublished outbox row (0 when the outbox is empty)",
    registers,
    collect: () => refreshOutbox(),
  });
  let outboxRefresh: Promise<void> | undefined;
  function refreshOutbox(): Promise<void> {
    outboxRefresh ??= guarded("outbox", [outboxRows, outboxAge], async () => {
      const backlog = await store.outbox(deps.pool);
      outboxRows.set(backlog.rows);
      outboxAge.set(Math.max(0, backlog.oldestAgeSeconds));
    }).finally(() => {
      outboxRefresh = undefined;
    });
    return outboxRefresh;
  }

  // Registered last, so the registry starts every other collect first and this one sees their failures.
  const errors: Counter<string> = new Counter({
    name: "switchyard_metrics_collect_errors_total",
    help: "Scrape-time metric sources that failed",
    labelNames: ["source"],
    registers,
    collect: async () => {
      await Promise.all([...running]);
      for (const [source, count] of failures) {
        errors.inc({ source }, count);
        failures.delete(source);
      }
    },
  });

  const names = [
    "switchyard_metrics_collect_errors_total",
    "switchyard_queue_length",
    "switchyard_queue_pending",
    "switchyard_dead_letter_queue_length",
    "switchyard_approvals_pending",
    "switchyard_tenant_daily_cost",
    "switchyard_tenant_daily_budget",
    "switchyard_audit_head_seq",
    "switchyard_audit_checkpoint_seq",
    "switchyard_flag_enabled",
    "switchyard_outbox_rows",
    "switchyard_outbox_oldest_age_seconds",
  ];
  return {
    unregister() {
      for (const name of names) registry.removeSingleMetric(name);
    },
  };
}

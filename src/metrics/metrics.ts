/**
 * Prometheus metrics. One `Metrics` object per process, created with its own registry and passed to the parts
 * that record; nothing registers globally.
 *
 * These are the metrics recorded where events happen (counters, histograms). Gauges that describe state — queue
 * lengths, pending approvals, flags, budgets, outbox age, audit heads — are read at scrape time instead, by the
 * collectors `collectMetrics` (src/metrics/collect.ts) registers on the same registry.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";

export interface Metrics {
  registry: Registry;
  foreignBreakerState: Gauge<"tenant" | "agent">;
  a2aCallbacks: Counter<"status">;
  a2aSweep: Counter<"result">;
  a2aCallbackBatchSize: Histogram<never>;
  a2aCallbackConflicts: Counter<never>;
  a2aLateArtifacts: Counter<never>;
  a2aPolls: Counter<"result">;
  hops: Counter<"action" | "verdict">;
  hopLatency: Histogram<"action">;
  events: Counter<"type" | "outcome">;
  deadLetters: Counter<"stream" | "reason">;
  reclaims: Counter<"stream">;
  /** Inbox envelopes of another coordinator's shard, forwarded to their shard's inbox (issue 11). */
  inboxForwarded: Counter<never>;
  /** 1 per shard this coordinator owns now (`shard` label); a status view of the split (issue 11). */
  shardOwned: Gauge<"shard">;
  /** Shard leases lost to a takeover, and shards handed over or acquired, by event. */
  shardMoves: Counter<"event">;
  /** Inbox envelopes refused by bus authentication or the sender check, by reason (README, Bus authentication). */
  inboxRefused: Counter<"reason">;
  outboxLag: Histogram<never>;
  /** Steps held back by dispatch limits, per tenant and destination, as the releaser last read them (its own tenants). */
  heldSteps: Gauge<"tenant" | "destination">;
  /** How long released steps were held, per tenant and destination. */
  queueDelay: Histogram<"tenant" | "destination">;
  auditAppendLatency: Histogram<never>;
  delegationDepthExceeded: Counter<never>;
  orphanReplies: Counter<never>;
  strandedStepsRepaired: Counter<never>;
  batchSize: Histogram<never>;
  /** Harness turns by stream and outcome (completed, failed, non_retryable, delegated, unsent, stale, duplicate, abandoned). */
  harnessTurns: Counter<"stream" | "outcome">;
  /** Time from a turn's start (entry taken) to its outcome sent, by stream and outcome. */
  harnessTurnSeconds: Histogram<"stream" | "outcome">;
  /** Turns running now in this harness process, by stream. */
  harnessInFlight: Gauge<"stream">;
  /** Age of a WORK/REPLY envelope (its `created_at`) when a harness read it for the first time, by stream. */
  harnessReadLag: Histogram<"stream">;
  /** HEARTBEAT envelopes a handler sent (`ctx.heartbeat()`), by stream. */
  harnessHeartbeats: Counter<"stream">;
  /** Checkpoint signer runs per tenant: signed, or refused because the chain did not verify. */
  checkpoints: Counter<"outcome">;
  /** 1 while this process reaches the dependency (postgres, redis), 0 during an outage (src/process/dependency-health.ts). */
  dependencyUp: Gauge<"dependency">;
  /** Outages started, per dependency. */
  dependencyOutages: Counter<"dependency">;
  /** Length of each outage that ended; its count is the number of recoveries (reconnections after an outage). */
  dependencyOutageSeconds: Histogram<"dependency">;
  /** Origin-reply dials by connection kind and outcome (sent, retry, failed, unknown) (src/replies/reply-sender.ts). */
  originReplyDials: Counter<"kind" | "outcome">;
  /** Time of one origin-reply dial, request to answer (or failure), by connection kind. */
  originReplyDialSeconds: Histogram<"kind">;
  /**
   * Deliveries to ingest endpoints by source and outcome: verified (a task started), unverified_generic, duplicate,
   * self_reply, ignored, url_verification, or refused: rejected_signature, rejected_stale, unknown_endpoint,
   * too_large, malformed, unverifiable (no encryption key to open the secret).
   */
  ingestDeliveries: Counter<"source" | "outcome">;
  /** Origin replies by final status (sent, failed, unknown, refused) and code (`""` when none); see countOriginReply. */
  originReplies: Counter<"status" | "code">;
}

/**
 * Counts one origin reply's final outcome. Refusals are counted when recorded (the engine); the sender counts
 * sent / failed / unknown when a dial settles. `code` is a refusal or failure code, never text or a secret.
 */
export function countOriginReply(metrics: Pick<Metrics, "originReplies"> | undefined, status: "sent" | "failed" | "unknown" | "refused", code = ""): void {
  metrics?.originReplies.inc({ status, code });
}

export function createMetrics(registry: Registry = new Registry()): Metrics {
  return {
    registry,
    foreignBreakerState: new Gauge({
      name: "switchyard_foreign_breaker_state",
      help: "Circuit breaker per foreign agent: 0 closed, 1 half-open, 2 open",
      labelNames: ["tenant", "agent"],
      registers: [registry],
    }),
    a2aCallbacks: new Counter({ name: "switchyard_a2a_callbacks_total", help: "A2A push notifications received, by HTTP status answered", labelNames: ["status"], registers: [registry] }),
    a2aSweep: new Counter({ name: "switchyard_a2a_sweep_total", help: "Reconciliation sweep results: bridges polled, resumed, timed out", labelNames: ["result"], registers: [registry] }),
    a2aCallbackBatchSize: new Histogram({ name: "switchyard_a2a_callback_batch_size", help: "Verified A2A pushes applied per callback-route statement", buckets: [1, 5, 10, 25, 50, 100, 200], registers: [registry] }),
    a2aCallbackConflicts: new Counter({ name: "switchyard_a2a_callback_conflicts_total", help: "Pushes whose bridge changed after it was read, applied again under a row lock", registers: [registry] }),
    a2aLateArtifacts: new Counter({ name: "switchyard_a2a_late_artifacts_total", help: "Foreign artifacts pushed after their bridge resolved (kept in a2a_bridge.late_artifacts, not in the output)", registers: [registry] }),
    a2aPolls: new Counter({ name: "switchyard_a2a_polls_total", help: "Poller GetTask calls by result: resolved, pending, failed, gave_up (resolved with what was collected)", labelNames: ["result"], registers: [registry] }),
    hops: new Counter({ name: "switchyard_hops_total", help: "Governed hops by action and verdict", labelNames: ["action", "verdict"], registers: [registry] }),
    hopLatency: new Histogram({
      name: "switchyard_hop_latency_seconds",
      help: "Time from an inbound envelope's creation to the commit of the hops it caused",
      labelNames: ["action"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    events: new Counter({ name: "switchyard_coordinator_events_total", help: "Coordinator events by type and outcome", labelNames: ["type", "outcome"], registers: [registry] }),
    deadLetters: new Counter({ name: "switchyard_dead_letters_total", help: "Entries moved to a dead-letter stream", labelNames: ["stream", "reason"], registers: [registry] }),
    inboxRefused: new Counter({
      name: "switchyard_inbox_refused_total",
      help: "Coordinator inbox envelopes refused (dead-lettered, never applied): no or bad MAC, unknown key, wrong sender, unknown task or tenant",
      labelNames: ["reason"],
      registers: [registry],
    }),
    inboxForwarded: new Counter({ name: "switchyard_inbox_forwarded_total", help: "Inbox envelopes forwarded to the inbox of their tenant's shard", registers: [registry] }),
    shardOwned: new Gauge({ name: "switchyard_shard_owned", help: "1 for each tenant shard this coordinator owns now", labelNames: ["shard"], registers: [registry] }),
    shardMoves: new Counter({ name: "switchyard_shard_moves_total", help: "Shard leases acquired, handed over, or lost to a takeover", labelNames: ["event"], registers: [registry] }),
    reclaims: new Counter({ name: "switchyard_reclaims_total", help: "Stalled entries reclaimed from a dead consumer", labelNames: ["stream"], registers: [registry] }),
    outboxLag: new Histogram({
      name: "switchyard_outbox_lag_seconds",
      help: "Age of outbox rows when published",
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10],
      registers: [registry],
    }),
    heldSteps: new Gauge({
      name: "switchyard_held_steps",
      help: "Ready steps held back by a dispatch limit (tenant fairness), per tenant and destination, of the tenants this coordinator owns",
      labelNames: ["tenant", "destination"],
      registers: [registry],
    }),
    queueDelay: new Histogram({
      name: "switchyard_queue_delay_seconds",
      help: "How long a step was held back by a dispatch limit before its release, per tenant and destination",
      labelNames: ["tenant", "destination"],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    auditAppendLatency: new Histogram({
      name: "switchyard_audit_append_seconds",
      help: "Time to append one batch of audit rows",
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
      registers: [registry],
    }),
    delegationDepthExceeded: new Counter({
      name: "switchyard_delegation_depth_exceeded_total",
      help: "Delegations that finished at or past the depth ceiling, so no REPLY was delivered",
      registers: [registry],
    }),
    orphanReplies: new Counter({ name: "switchyard_orphan_replies_total", help: "Replies whose origin was unknown or no longer waiting", registers: [registry] }),
    strandedStepsRepaired: new Counter({
      name: "switchyard_stranded_steps_repaired_total",
      help: "Pending steps whose needs were all complete, found by the sweep and dispatched (each one is a lost transition: investigate)",
      registers: [registry],
    }),
    batchSize: new Histogram({ name: "switchyard_coordinator_batch_size", help: "Inbound envelopes per coordinator transaction", buckets: [1, 5, 10, 25, 50, 100, 200, 500], registers: [registry] }),
    harnessTurns: new Counter({ name: "switchyard_harness_turns_total", help: "Harness turns by stream and outcome", labelNames: ["stream", "outcome"], registers: [registry] }),
    harnessTurnSeconds: new Histogram({
      name: "switchyard_harness_turn_seconds",
      help: "Harness turn duration, entry taken to outcome sent, by stream and outcome",
      labelNames: ["stream", "outcome"],
      buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
    harnessInFlight: new Gauge({ name: "switchyard_harness_turns_in_flight", help: "Turns running now in this harness process", labelNames: ["stream"], registers: [registry] }),
    harnessReadLag: new Histogram({
      name: "switchyard_harness_read_lag_seconds",
      help: "Age of an envelope (created_at) when a harness first read it: queueing before a worker took it",
      labelNames: ["stream"],
      buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
    harnessHeartbeats: new Counter({ name: "switchyard_harness_heartbeats_total", help: "HEARTBEAT envelopes sent by handlers (ctx.heartbeat)", labelNames: ["stream"], registers: [registry] }),
    checkpoints: new Counter({ name: "switchyard_audit_checkpoints_total", help: "Audit checkpoint signing by outcome (signed, refused)", labelNames: ["outcome"], registers: [registry] }),
    dependencyUp: new Gauge({ name: "switchyard_dependency_up", help: "1 while this process reaches the dependency, 0 during an outage", labelNames: ["dependency"], registers: [registry] }),
    dependencyOutages: new Counter({ name: "switchyard_dependency_outages_total", help: "Outages of a dependency (Postgres, Redis) this process saw start", labelNames: ["dependency"], registers: [registry] }),
    dependencyOutageSeconds: new Histogram({
      name: "switchyard_dependency_outage_seconds",
      help: "Length of each dependency outage this process recovered from (reconnected after)",
      labelNames: ["dependency"],
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
      registers: [registry],
    }),
    originReplyDials: new Counter({
      name: "switchyard_origin_reply_dials_total",
      help: "Origin-reply dials by connection kind and outcome: sent, retry (connection failed or 429, dialed again later), failed, unknown",
      labelNames: ["kind", "outcome"],
      registers: [registry],
    }),
    originReplyDialSeconds: new Histogram({
      name: "switchyard_origin_reply_dial_seconds",
      help: "Time of one origin-reply dial (the provider request, and Slack's permalink lookup), by connection kind",
      labelNames: ["kind"],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    ingestDeliveries: new Counter({
      name: "switchyard_ingest_deliveries_total",
      help: "Deliveries to ingest endpoints by source and outcome (verified, unverified_generic, duplicate, self_reply, ignored, rejected_signature, rejected_stale, unknown_endpoint, too_large, …)",
      labelNames: ["source", "outcome"],
      registers: [registry],
    }),
    originReplies: new Counter({
      name: "switchyard_origin_replies_total",
      help: "Origin replies by final status (sent, failed, unknown, refused) and code",
      labelNames: ["status", "code"],
      registers: [registry],
    }),
  };
}

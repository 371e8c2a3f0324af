/**
 * The coordinator process: consumes its inbox (RESULT / QUERY / CONTROL) in batches, applies each batch through
 * the engine in one transaction, acknowledges after commit, then publishes what the batch produced. Beside it
 * run the sweeper (timeouts and retry backoff), the outbox relay and stream trimming. Several coordinators may
 * run against the same streams and database: row locks and status guards keep every transition single.
 */
import { toBinary } from "@bufbuild/protobuf";
import { COORDINATOR_STREAM, type Bus, type BusEntry } from "../bus/bus.js";
import { EnvelopeSchema } from "../gen/switchyard/bus/v1/envelope_pb.js";
import { isSwitchyardError } from "../errors.js";
import type { Pool } from "../store/db.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import type { Engine, EngineInput } from "./engine.js";
import { envelopeToEvent } from "./envelopes.js";
import type { OutboxPublisher } from "./outbox-publisher.js";

export const COORDINATOR_GROUP = "coordinator";

export interface CoordinatorOptions {
  pool: Pool;
  bus: Bus;
  engine: Engine;
  publisher: OutboxPublisher;
  consumer: string;
  batchSize: number;
  blockMs: number;
  reclaimIdleMs: number;
  sweepIntervalMs: number;
  trimMaxLen: number;
  logger?: Logger;
  metrics?: Metrics;
  clock?: () => number;
}

export class Coordinator {
  private readonly logger: Logger;
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  private readonly clock: () => number;
  /** Streams this process published to, trimmed periodically. */
  private readonly streams = new Set<string>([COORDINATOR_STREAM]);

  constructor(private readonly options: CoordinatorOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "coordinator", consumer: options.consumer });
    this.clock = options.clock ?? Date.now;
  }

  /** Starts the loops; resolves once they have all stopped (after `close()` or the signal). */
  start(signal?: AbortSignal): Promise<void> {
    if (this.running) return this.running;
    signal?.addEventListener("abort", () => this.abort.abort(), { once: true });
    this.running = (async () => {
      await this.options.bus.ensureGroup(COORDINATOR_STREAM, COORDINATOR_GROUP);
      await Promise.all([this.inboxLoop(), this.periodic("sweep", this.options.sweepIntervalMs, () => this.sweepOnce()), this.periodic("trim", 10_000, () => this.trimOnce())]);
    })();
    return this.running;
  }

  async close(): Promise<void> {
    this.abort.abort();
    await this.running?.catch(() => {});
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  private async inboxLoop(): Promise<void> {
    const { bus, batchSize, blockMs, consumer, reclaimIdleMs } = this.options;
    let lastReclaim = 0;
    while (!this.stopped) {
      try {
        let entries: BusEntry[] = [];
        if (this.clock() - lastReclaim >= reclaimIdleMs / 2) {
          lastReclaim = this.clock();
          entries = await bus.reclaim({ stream: COORDINATOR_STREAM, group: COORDINATOR_GROUP, consumer, minIdleMs: reclaimIdleMs, count: batchSize });
          if (entries.length > 0) this.options.metrics?.reclaims.inc({ stream: COORDINATOR_STREAM }, entries.length);
        }
        if (entries.length === 0) {
          entries = await bus.read({ stream: COORDINATOR_STREAM, group: COORDINATOR_GROUP, consumer, count: batchSize, blockMs, signal: this.abort.signal });
        }
        if (entries.length > 0) await this.processBatch(entries);
      } catch (error) {
        if (this.stopped) break;
        this.logger.error({ err: error }, "coordinator inbox loop failed; retrying");
        await sleep(500, this.abort.signal);
      }
    }
  }

  /** Applies one batch. Exposed for tests and benchmarks that drive the coordinator step by step. */
  async processBatch(entries: readonly BusEntry[]): Promise<void> {
    const { bus, engine, pool, publisher } = this.options;
    const inputs: EngineInput[] = [];
    const ackIds: string[] = [];
    for (const entry of entries) {
      try {
        const inbound = envelopeToEvent(entry.envelope);
        inputs.push({ ...inbound, dedupe: inbound.event.type !== "heartbeat", createdAtMs: Number(entry.envelope.createdAtMs) || undefined });
        ackIds.push(entry.id);
      } catch (error) {
        if (!isSwitchyardError(error)) throw error;
        this.logger.warn({ err: error, envelopeId: entry.envelope.id, orgId: entry.envelope.orgId }, "inbound envelope refused; dead-lettered");
        this.options.metrics?.deadLetters.inc({ stream: COORDINATOR_STREAM, reason: error.code });
        await bus.deadLetter(COORDINATOR_STREAM, COORDINATOR_GROUP, entry.id, toBinary(EnvelopeSchema, entry.envelope), `${error.code}: ${error.message}`);
      }
    }
    if (inputs.length === 0) return;
    this.options.metrics?.batchSize.observe(inputs.length);
    // On failure nothing is acknowledged: the entries are redelivered (reclaim) and dead-lettered after N tries.
    const result = await engine.apply(pool, inputs);
    for (const input of inputs) this.options.metrics?.events.inc({ type: input.event.type, outcome: "seen" });
    await bus.ack(COORDINATOR_STREAM, COORDINATOR_GROUP, ackIds);
    for (const row of result.outbox) this.streams.add(row.stream);
    await publisher.publish(result.outbox);
  }

  /** Fires due steps (timeouts, retry backoff) and publishes stale outbox rows. */
  async sweepOnce(): Promise<number> {
    const now = this.clock();
    const { rows } = await this.options.pool.query<{ org_id: string; task_id: string; step_id: string; attempt: number; due_at_ms: number }>(
      `SELECT org_id, task_id, step_id, attempt, due_at_ms FROM steps
       WHERE status IN ('dispatched', 'retrying', 'waiting') AND due_at_ms <= $1 ORDER BY due_at_ms LIMIT 500`,
      [now],
    );
    if (rows.length > 0) {
      const result = await this.options.engine.apply(
        this.options.pool,
        rows.map((r) => ({
          orgId: r.org_id,
          taskId: r.task_id,
          event: { type: "step_due" as const, eventId: `due:${r.task_id}:${r.step_id}:${r.attempt}:${r.due_at_ms}`, stepId: r.step_id, attempt: r.attempt },
        })),
      );
      for (const row of result.outbox) this.streams.add(row.stream);
      await this.options.publisher.publish(result.outbox);
    }
    await this.options.publisher.sweep();
    return rows.length;
  }

  private async trimOnce(): Promise<void> {
    for (const stream of this.streams) await this.options.bus.trim(stream, this.options.trimMaxLen);
    await this.options.pool.query("DELETE FROM processed_envelopes WHERE processed_at < now() - interval '7 days'");
  }

  private async periodic(name: string, intervalMs: number, fn: () => Promise<unknown>): Promise<void> {
    while (!this.stopped) {
      await sleep(intervalMs, this.abort.signal);
      if (this.stopped) break;
      try {
        await fn();
      } catch (error) {
        if (!this.stopped) this.logger.error({ err: error, loop: name }, "periodic job failed");
      }
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * Instrumentation for the Switchyard scenarios, built by subclassing the real parts (never by changing them):
 *
 * - `ProbedEngine` times every `apply` (BEGIN → COMMIT), the part spent inside the transaction, and each SQL
 *   statement the transaction sends (by kind and table), and tells listeners what every committed batch did;
 * - `ProbedPublisher` times the post-commit publish (pipelined XADD + the outbox DELETE).
 *
 * Node CPU inside a batch is what is left of the in-transaction time once the statements' round trips are taken
 * out; it covers decide, governor, hashing, protobuf encoding and pg's own (de)serialisation.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import { Engine, type ApplyInTransactionOptions, type ApplyResult, type EngineInput } from "../../src/coordinator/engine.js";
import { OutboxPublisher } from "../../src/coordinator/outbox-publisher.js";
import type { OutboxRow } from "../../src/store/engine/engine-store.js";
import type { Pool, PoolClient } from "../../src/store/db.js";

/** Running totals of one kind of timed work. */
export class Tally {
  count = 0;
  totalMs = 0;
  maxMs = 0;
  /** CPU the Postgres backend spent on it (ms); only with `Profile.measurePostgres`. */
  postgresMs = 0;

  add(ms: number): void {
    this.count++;
    this.totalMs += ms;
    if (ms > this.maxMs) this.maxMs = ms;
  }

  get meanMs(): number {
    return this.count ? this.totalMs / this.count : 0;
  }
}

/** Everything the probes saw since the last `reset()`. */
export class Profile {
  /**
   * Also read each statement's Postgres backend CPU from /proc/<pid>/schedstat (Linux, ns resolution) before and
   * after it. Costs Node ~20 µs per statement, so it is for profiling runs, not for the reported figures.
   */
  measurePostgres = false;
  readonly apply = new Tally();
  readonly inTransaction = new Tally();
  readonly statements = new Map<string, Tally>();
  readonly publish = new Tally();
  events = 0;
  auditRows = 0;
  outboxRows = 0;

  statement(name: string): Tally {
    let tally = this.statements.get(name);
    if (!tally) this.statements.set(name, (tally = new Tally()));
    return tally;
  }

  reset(): void {
    for (const tally of [this.apply, this.inTransaction, this.publish]) Object.assign(tally, new Tally());
    this.statements.clear();
    this.events = this.auditRows = this.outboxRows = 0;
  }

  /**
   * Per-batch and per-hop costs, rounded for the report: where a batch spends its time (statements by name, Node
   * CPU inside the transaction, BEGIN+COMMIT, publish) and how many statements a batch sends.
   */
  summary(): Record<string, unknown> {
    const batches = this.apply.count;
    if (batches === 0) return { batches: 0 };
    const statementMs = [...this.statements.values()].reduce((sum, t) => sum + t.totalMs, 0);
    const statementCount = [...this.statements.values()].reduce((sum, t) => sum + t.count, 0);
    const perBatch = (ms: number): number => round(ms / batches);
    const perHop = (ms: number): number => (this.auditRows ? round((ms * 1000) / this.auditRows) : 0);
    const statements = Object.fromEntries(
      [...this.statements.entries()]
        .sort((a, b) => b[1].totalMs - a[1].totalMs)
        .map(([name, t]) => [
          name,
          { per_batch: round(t.count / batches), ms_per_batch: perBatch(t.totalMs), ...(this.measurePostgres ? { postgres_ms_per_batch: perBatch(t.postgresMs) } : {}) },
        ]),
    );
    return {
      batches,
      events_per_batch: round(this.events / batches),
      audit_rows_per_batch: round(this.auditRows / batches),
      statements_per_batch: round(statementCount / batches + 2), // + BEGIN and COMMIT
      ms_per_batch: {
        apply: perBatch(this.apply.totalMs),
        statements: perBatch(statementMs),
        node_in_transaction: perBatch(this.inTransaction.totalMs - statementMs),
        begin_commit_and_checkout: perBatch(this.apply.totalMs - this.inTransaction.totalMs),
        ...(this.publish.count ? { publish_after_commit: round(this.publish.totalMs / this.publish.count) } : {}),
      },
      us_per_audit_row: {
        apply: perHop(this.apply.totalMs),
        statements: perHop(statementMs),
        node_in_transaction: perHop(this.inTransaction.totalMs - statementMs),
        begin_commit: perHop(this.apply.totalMs - this.inTransaction.totalMs),
        publish: perHop(this.publish.totalMs),
      },
      statements,
    };
  }
}

const round = (n: number): number => Math.round(n * 100) / 100;

/** CPU time of a local Postgres backend so far (ms), from /proc/<pid>/schedstat; 0 when unreadable. */
export function backendCpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]) / 1e6;
  } catch {
    return 0;
  }
}

/** `INSERT processed_envelopes`, `SELECT tasks`, `UPDATE audit_heads`, … */
export function statementName(sql: string): string {
  const text = sql.replace(/\s+/g, " ").trim();
  const verb = /^(WITH|INSERT|UPDATE|DELETE|SELECT)\b/i.exec(text)?.[1]?.toUpperCase() ?? text.split(" ")[0] ?? "?";
  // The statement's own table, not one inside a parenthesised expression (`extract(epoch FROM finished_at)`).
  let outer = text;
  for (let previous = ""; previous !== outer; ) [previous, outer] = [outer, outer.replace(/\([^()]*\)/g, "")];
  const tableIn = (t: string): string | undefined => /\b(?:INSERT INTO|UPDATE|DELETE FROM|FROM)\s+([a-z_]+)/i.exec(t)?.[1];
  return `${verb} ${tableIn(outer) ?? tableIn(text) ?? "?"}`;
}

export type AppliedListener = (result: ApplyResult, inputs: readonly EngineInput[], startedAt: number, committedAt: number) => void;

/**
 * The real engine; times each batch and its statements and reports every committed batch to listeners. Only
 * `apply` (the coordinator's and the bench's batches) is probed, not `applyInTransaction` called on its own
 * (TaskService), so per-batch figures describe coordinator batches.
 */
export class ProbedEngine extends Engine {
  readonly profile = new Profile();
  private readonly listeners = new Set<AppliedListener>();
  private readonly insideApply = new AsyncLocalStorage<{ pid?: number; cpuBeforeCommit?: number }>();

  onApplied(listener: AppliedListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  override async apply(pool: Pool, inputs: readonly EngineInput[]): Promise<ApplyResult> {
    const startedAt = performance.now();
    const store: { pid?: number; cpuBeforeCommit?: number } = {};
    const result = await this.insideApply.run(store, () => super.apply(pool, inputs));
    const committedAt = performance.now();
    if (this.profile.measurePostgres && store.cpuBeforeCommit !== undefined) {
      this.profile.statement("COMMIT").postgresMs += backendCpuMs(store.pid) - store.cpuBeforeCommit;
    }
    this.profile.apply.add(committedAt - startedAt);
    this.profile.events += inputs.length;
    this.profile.auditRows += result.audit.length;
    this.profile.outboxRows += result.outbox.length;
    for (const listener of this.listeners) listener(result, inputs, startedAt, committedAt);
    return result;
  }

  override async applyInTransaction(client: PoolClient, inputs: readonly EngineInput[], options?: ApplyInTransactionOptions): Promise<ApplyResult> {
    const store = this.insideApply.getStore();
    if (!store) return super.applyInTransaction(client, inputs, options);
    const started = performance.now();
    try {
      return await super.applyInTransaction(timedClient(client, this.profile), inputs, options);
    } finally {
      this.profile.inTransaction.add(performance.now() - started);
      // COMMIT is sent by `withTransaction` right after this returns; `apply` reads the backend again after it.
      store.pid = (client as unknown as { processID?: number }).processID;
      store.cpuBeforeCommit = this.profile.measurePostgres ? backendCpuMs(store.pid) : 0;
    }
  }
}

/** The transaction's client with every `query` timed under its statement name. */
function timedClient(client: PoolClient, profile: Profile): PoolClient {
  const pid = (client as unknown as { processID?: number }).processID;
  const query = (...args: unknown[]): unknown => {
    const started = performance.now();
    const tally = profile.statement(typeof args[0] === "string" ? statementName(args[0]) : "?");
    const cpuBefore = profile.measurePostgres ? backendCpuMs(pid) : 0;
    const pending = (client.query as (...a: unknown[]) => Promise<unknown>)(...args);
    return pending.finally(() => {
      tally.add(performance.now() - started);
      if (profile.measurePostgres) tally.postgresMs += backendCpuMs(pid) - cpuBefore;
    });
  };
  return new Proxy(client, { get: (target, property, receiver) => (property === "query" ? query : Reflect.get(target, property, receiver)) });
}

export class ProbedPublisher extends OutboxPublisher {
  profile: Profile | undefined;

  override async publish(rows: readonly OutboxRow[]): Promise<void> {
    const started = performance.now();
    await super.publish(rows);
    if (rows.length > 0) this.profile?.publish.add(performance.now() - started);
  }
}


/**
 * CPU spent while a phase ran: this Node process (all threads), Redis (INFO cpu), the Postgres backends serving
 * the scratch database (/proc/<pid>/stat; Linux only) and the whole machine's busy share (/proc/stat). Per-process
 * figures stay meaningful when something else loads the box; the machine share does not.
 */
export interface CpuSample {
  nodeMs: number;
  redisMs: number;
  /** CPU ms per Postgres backend pid; null when /proc is not readable. */
  postgres: Map<number, number> | null;
  machineBusyMs: number | null;
  machineTotalMs: number | null;
}

export interface CpuSources {
  redisInfo(): Promise<string>;
  /** Backend pids of the database under test (`pg_stat_activity`). */
  postgresPids(): Promise<number[]>;
}

// USER_HZ is 100 on every Linux the bench is expected to meet.
const TICK_MS = 10;

export async function sampleCpu(sources: CpuSources): Promise<CpuSample> {
  const usage = process.cpuUsage();
  const info = await sources.redisInfo().catch(() => "");
  const field = (name: string): number => Number(new RegExp(`^${name}:([0-9.]+)`, "m").exec(info)?.[1] ?? 0);
  const pids = await sources.postgresPids().catch(() => []);
  const postgres = await Promise.all(pids.map(async (pid) => [pid, await processCpuMs(pid)] as const));
  const machine = await readProcStat();
  return {
    nodeMs: (usage.user + usage.system) / 1000,
    redisMs: (field("used_cpu_user") + field("used_cpu_sys")) * 1000,
    postgres: pids.length === 0 || postgres.every(([, ms]) => ms === undefined) ? null : new Map(postgres.filter(([, ms]) => ms !== undefined) as Array<[number, number]>),
    machineBusyMs: machine?.busyMs ?? null,
    machineTotalMs: machine?.totalMs ?? null,
  };
}

async function processCpuMs(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th fields overall.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return undefined;
  }
}

async function readProcStat(): Promise<{ busyMs: number; totalMs: number } | undefined> {
  try {
    const line = (await readFile("/proc/stat", "utf8")).split("\n")[0]!;
    const ticks = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
    const total = ticks.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busyMs: (total - idle) * TICK_MS, totalMs: total * TICK_MS };
  } catch {
    return undefined;
  }
}

/**
 * CPU per unit of work between two samples, in µs, and the machine's busy share. A Postgres backend that
 * connected between the samples counts all its CPU.
 */
export function cpuPerUnit(before: CpuSample, after: CpuSample, units: number): Record<string, number | null> {
  if (units <= 0) return {};
  const us = (ms: number): number => round((ms * 1000) / units);
  const busy = before.machineBusyMs !== null && after.machineBusyMs !== null ? after.machineBusyMs - before.machineBusyMs : null;
  const total = before.machineTotalMs !== null && after.machineTotalMs !== null ? after.machineTotalMs - before.machineTotalMs : null;
  return {
    node_us: us(after.nodeMs - before.nodeMs),
    postgres_us: after.postgres === null ? null : us([...after.postgres].reduce((sum, [pid, ms]) => sum + ms - (before.postgres?.get(pid) ?? 0), 0)),
    redis_us: us(after.redisMs - before.redisMs),
    machine_busy_pct: busy === null || !total ? null : round((busy / total) * 100),
  };
}

/**
 * Watches the system from outside while it runs: every half second a sample of progress from the database
 * (completed steps, finished tasks, audit rows), and every two seconds the dead-letter streams in Redis. Samples
 * give the recovery time of each fault and tell "slow" from "stuck": the run waits while anything moves and
 * stops when nothing has for the stall window. Dead letters are collected as they appear, because the Redis
 * restart fault erases the streams that hold them.
 *
 * Its own connections expect the services to vanish: one pg client with an error listener, dropped and opened
 * again after any failure; an ioredis client that reconnects by itself.
 */
import pg from "pg";
import { Redis } from "ioredis";
import { sleep } from "./random.js";
import { DEAD_FIELDS } from "../src/bus/lua/fields.js";

export interface Sample {
  at: number;
  /** false: the database did not answer (the other fields repeat the last good sample). */
  ok: boolean;
  completedSteps: number;
  finishedTasks: number;
  tasks: number;
  auditRows: number;
}

export interface DeadLetter {
  key: string;
  id: string;
  stream: string;
  reason: string;
  deliveries: string;
}

const SAMPLE_SQL = `SELECT (SELECT count(*) FROM steps WHERE status = 'completed')::int AS completed_steps,
  (SELECT count(*) FROM tasks WHERE status IN ('completed', 'failed', 'cancelled'))::int AS finished_tasks,
  (SELECT count(*) FROM tasks)::int AS tasks,
  (SELECT coalesce(sum(seq), 0) FROM audit_heads)::int AS audit_rows`;

export class Monitor {
  readonly samples: Sample[] = [];
  readonly deadLetters = new Map<string, DeadLetter>();
  private client: pg.Client | null = null;
  private readonly redis: Redis;
  private stopped = false;
  private loops: Promise<void>[] = [];

  constructor(private readonly options: { databaseUrl: string; redisUrl: string; keyPrefix: string }) {
    this.redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 1, retryStrategy: () => 200 });
    this.redis.on("error", () => {});
  }

  get latest(): Sample {
    return this.samples.at(-1) ?? { at: Date.now(), ok: false, completedSteps: 0, finishedTasks: 0, tasks: 0, auditRows: 0 };
  }

  start(): void {
    this.loops = [
      (async () => {
        while (!this.stopped) {
          await this.sample();
          await sleep(500);
        }
      })(),
      (async () => {
        while (!this.stopped) {
          await this.collectDeadLetters().catch(() => {});
          await sleep(2_000);
        }
      })(),
    ];
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
    await this.client?.end().catch(() => {});
    this.redis.disconnect();
  }

  /** Runs one query on the suite's own connection; throws when the database does not answer. */
  async query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
    try {
      if (!this.client) {
        const client = new pg.Client({ connectionString: this.options.databaseUrl, query_timeout: 10_000, connectionTimeoutMillis: 3_000 });
        client.on("error", () => {});
        await client.connect();
        this.client = client;
      }
      return (await this.client.query<R>(sql, params)).rows;
    } catch (error) {
      const broken = this.client;
      this.client = null;
      await broken?.end().catch(() => {});
      throw error;
    }
  }

  async sample(): Promise<Sample> {
    let sample: Sample;
    try {
      const [row] = await this.query<{ completed_steps: number; finished_tasks: number; tasks: number; audit_rows: number }>(SAMPLE_SQL);
      sample = { at: Date.now(), ok: true, completedSteps: row!.completed_steps, finishedTasks: row!.finished_tasks, tasks: row!.tasks, auditRows: row!.audit_rows };
    } catch {
      sample = { ...this.latest, at: Date.now(), ok: false };
    }
    this.samples.push(sample);
    return sample;
  }

  /** The first sample after `after` whose completed-step count exceeds `baseline`, if any. */
  firstProgressAfter(after: number, baseline: number): Sample | undefined {
    return this.samples.find((s) => s.at > after && s.ok && s.completedSteps > baseline);
  }

  /** Reads every dead-letter stream under the prefix; entries already seen are kept (a Redis restart erases them). */
  async collectDeadLetters(): Promise<void> {
    let cursor = "0";
    do {
      const [next, keys] = await this.redis.scan(cursor, "MATCH", `${this.options.keyPrefix}*:dead`, "COUNT", 200);
      cursor = next;
      for (const key of keys) {
        const entries = await this.redis.xrange(key, "-", "+", "COUNT", 1000);
        for (const [id, fields] of entries) {
          const field = (name: string) => {
            const i = fields.findIndex((f, n) => n % 2 === 0 && f === name);
            return i >= 0 ? fields[i + 1]! : "";
          };
          this.deadLetters.set(`${key}/${id}`, { key, id, stream: field(DEAD_FIELDS.stream), reason: field(DEAD_FIELDS.reason), deliveries: field(DEAD_FIELDS.deliveries) });
        }
      }
    } while (cursor !== "0");
  }
}

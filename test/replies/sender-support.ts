/**
 * Rows for the reply-sender tests, inserted as the `reply` verb and ingest would leave them: a task with its reply
 * address (set at INSERT; nothing may update it), a tenant's connection with its secret sealed, and a `pending`
 * reply. Plus a sender on loopback and a pino logger whose every line is kept, to grep for secrets.
 */
import { randomBytes, randomUUID, createHash } from "node:crypto";
import { Writable } from "node:stream";
import { createLogger, type Logger } from "../../src/logger.js";
import { createMetrics, type Metrics } from "../../src/metrics/metrics.js";
import type { ReplyAddress } from "../../src/core/reply-address.js";
import { createPostgresConnectionStore } from "../../src/store/vault/postgres-connection-store.js";
import { createReplySender, type ReplySender, type ReplySenderOptions } from "../../src/replies/reply-sender.js";
import type { Pool } from "../../src/store/db.js";
import { createPostgresReplyStore } from "../../src/store/replies/postgres-reply-store.js";
import { createSecretCipher, type SecretCipher } from "../../src/vault/secret-cipher.js";

export const cipher: SecretCipher = createSecretCipher([{ id: "t1", key: randomBytes(32) }])!;

export interface CapturedLogger {
  logger: Logger;
  lines: string[];
}

export function captureLogger(): CapturedLogger {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString("utf8"));
      callback();
    },
  });
  return { logger: createLogger({ level: "debug", destination }), lines };
}

export async function seedTenant(pool: Pool, org: string): Promise<void> {
  await pool.query("INSERT INTO tenants (org_id, name) VALUES ($1, $1) ON CONFLICT DO NOTHING", [org]);
  await pool.query("INSERT INTO workflows (org_id, name, version, definition, digest) VALUES ($1, 'wf', 1, '{}', 'd') ON CONFLICT DO NOTHING", [org]);
}

/** A fresh tenant (connections are unique per tenant, kind and account key, so each test takes its own). */
export async function newTenant(pool: Pool): Promise<string> {
  const org = `t${randomBytes(5).toString("hex")}`;
  await seedTenant(pool, org);
  return org;
}

/** A task whose reply address is set at creation, as ingest does. */
export async function insertTask(pool: Pool, org: string, replyTo: ReplyAddress | Record<string, unknown> | null): Promise<string> {
  const id = randomUUID();
  await pool.query(
    "INSERT INTO tasks (id, org_id, workflow_name, workflow_version, input, status, reply_to) VALUES ($1, $2, 'wf', 1, '{}', 'running', $3)",
    [id, org, replyTo === null ? null : JSON.stringify(replyTo)],
  );
  return id;
}

export async function insertConnection(
  pool: Pool,
  c: { org: string; kind: string; accountKey: string; apiBaseUrl: string; secret: string },
): Promise<string> {
  const id = randomUUID();
  await pool.query(
    `INSERT INTO connections (id, org_id, kind, account_key, api_base_url, secret_ciphertext, secret_fingerprint, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'test')`,
    [id, c.org, c.kind, c.accountKey, c.apiBaseUrl, cipher.seal(c.secret, `connection:${id}`), cipher.fingerprint(c.secret)],
  );
  return id;
}

export async function insertReply(
  pool: Pool,
  r: { org: string; taskId: string; connectionId: string | null; text: string; state?: string; claimedUntilSql?: string },
): Promise<string> {
  const id = randomUUID();
  const sha = createHash("sha256").update(r.text).digest("hex");
  await pool.query(
    `INSERT INTO origin_replies (id, org_id, task_id, request_id, actor, idempotency_key, connection_id, state, text, text_sha256, next_attempt_at, claimed_until, dial_attempts)
     VALUES ($1, $2, $3, $4, 'role:writer', $5, $6, $7, $8, $9, now(), ${r.claimedUntilSql ?? "NULL"}, $10)`,
    [id, r.org, r.taskId, `req-${id}`, `key-${id}`, r.connectionId, r.state ?? "pending", r.text, sha, r.state === "dialing" ? 1 : 0],
  );
  return id;
}

export interface ReplyRow {
  state: string;
  code: string | null;
  message: string | null;
  provider_id: string | null;
  permalink: string | null;
  dial_attempts: number;
  next_attempt_at: Date | null;
  finished_at: Date | null;
  ms_until_next: number | null;
}

export async function readReply(pool: Pool, id: string): Promise<ReplyRow> {
  const { rows } = await pool.query(
    `SELECT state, code, message, provider_id, permalink, dial_attempts, next_attempt_at, finished_at,
            (EXTRACT(EPOCH FROM (next_attempt_at - now())) * 1000)::float8 AS ms_until_next
       FROM origin_replies WHERE id = $1`,
    [id],
  );
  return rows[0] as ReplyRow;
}

export interface TestSender {
  sender: ReplySender;
  log: CapturedLogger;
  metrics: Metrics;
}

/** A sender admitting loopback (as an operator would with SWITCHYARD_EGRESS_ALLOWED_NETWORKS), short timeouts. */
export function loopbackSender(pool: Pool, overrides: Partial<ReplySenderOptions> = {}): TestSender {
  const log = captureLogger();
  const metrics = createMetrics();
  const sender = createReplySender({
    pool,
    store: createPostgresReplyStore(),
    connections: createPostgresConnectionStore(),
    cipher,
    egress: { allowedNetworks: ["127.0.0.0/8"], connectTimeoutMs: 1_000 },
    timeoutMs: 2_000,
    dialAttempts: 3,
    retryBaseMs: 50,
    logger: log.logger,
    metrics,
    ...overrides,
  });
  return { sender, log, metrics };
}

/** Runs the sender until `done` holds for the row (it is not due yet after a backoff), at most `rounds` times. */
export async function runUntil(sender: ReplySender, pool: Pool, id: string, done: (row: ReplyRow) => boolean, rounds = 100): Promise<ReplyRow> {
  for (let i = 0; i < rounds; i++) {
    await sender.runOnce();
    const row = await readReply(pool, id);
    if (done(row)) return row;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`reply ${id} never reached the awaited state: ${JSON.stringify(await readReply(pool, id))}`);
}

export const GITHUB_ADDRESS = { kind: "forge_comment", forge: "github", host: "github.com", repository: "acme/widgets", number: 42 } as const;
export const GITEA_ADDRESS = { kind: "forge_comment", forge: "gitea", host: "gitea.example", repository: "acme/gadgets", number: 7 } as const;
export const SLACK_ADDRESS = { kind: "slack_thread", teamId: "T0STUB", channel: "C0123ABC", threadTs: "1700000000.000100" } as const;
export const CAIRN_ADDRESS = { kind: "cairn_comment", baseUrl: "https://cairn.example", artifactId: "art_9xK2" } as const;

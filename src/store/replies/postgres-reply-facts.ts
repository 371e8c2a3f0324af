/**
 * The Postgres adapter of the ReplyFactsSource port (store/engine/engine-store.ts): what the engine reads, inside the batch's transaction and
 * under the task's lock, before the pure `decideReplyRequest` runs — the task's recorded replies, whether the
 * idempotency key was used, the connection the address selects, the secret scan, the (tenant, actor) bucket —
 * and, for an approval decision, the parked reply it names. Reading under the task lock makes the count and the
 * key check exact across coordinators (the lock serialises every reply of a task).
 */
import type { ReplyAddress } from "../../core/reply-address.js";
import type { Queryable } from "../db.js";
import { selectConnection as vaultSelect } from "../../vault/connection-select.js";
import { createPostgresConnectionStore } from "../vault/postgres-connection-store.js";
import { MAX_REPLY_TEXT_BYTES, type ConnectionSelection, type ReplyState } from "../../core/reply-types.js";
import { scanForSecrets, type SecretScanner } from "../../replies/secret-scan.js";
import type { ReplyFactsSource } from "../engine/engine-store.js";

export type { ReplyFactsSource, ReplyRequestQuery } from "../engine/engine-store.js";

/** Picks the task's tenant's connection for an address (the vault's `selectConnection`, src/vault/). */
export type ConnectionSelector = (db: Queryable, orgId: string, address: ReplyAddress) => Promise<ConnectionSelection>;

export interface ReplyFactsOptions {
  /** @defaultValue the vault's exact kind + account key match with its targets allowlist */
  selectConnection?: ConnectionSelector;
  /** @defaultValue secretlint's recommended rules */
  scanSecrets?: SecretScanner;
}

export function createReplyFactsSource(options: ReplyFactsOptions = {}): ReplyFactsSource {
  const connections = createPostgresConnectionStore();
  const select: ConnectionSelector = options.selectConnection ?? ((db, orgId, address) => vaultSelect(connections, db, orgId, address));
  const scan = options.scanSecrets ?? scanForSecrets;
  return {
    async forRequest(db, q) {
      const { rows } = await db.query<{ recorded: number; duplicate: boolean }>(
        `SELECT count(*)::int AS recorded, coalesce(bool_or(idempotency_key = $3), false) AS duplicate
         FROM origin_replies WHERE org_id = $1 AND task_id = $2 AND state <> 'refused'`,
        [q.orgId, q.taskId, q.idempotencyKey],
      );
      // Locked: two coordinators taking tokens of one bucket must not both spend the same token.
      const bucket = await db.query<{ tokens: number; updated_ms: string }>(
        `SELECT tokens, (extract(epoch FROM updated_at) * 1000)::bigint AS updated_ms FROM reply_buckets
         WHERE org_id = $1 AND actor = $2 FOR UPDATE`,
        [q.orgId, q.actor],
      );
      const b = bucket.rows[0];
      return {
        kind: "request",
        recordedCount: rows[0]?.recorded ?? 0,
        duplicate: rows[0]?.duplicate ?? false,
        connection: q.address ? await select(db, q.orgId, q.address) : undefined,
        // Only text that could be posted is scanned: without an address, or over the size cap, it is refused anyway.
        secretRule: q.address && Buffer.byteLength(q.text) <= MAX_REPLY_TEXT_BYTES ? await scan(q.text) : null,
        bucket: b ? { tokens: b.tokens, updatedAtMs: Number(b.updated_ms) } : null,
      };
    },

    async forApproval(db, orgId, approvalId) {
      const { rows } = await db.query<{
        id: string;
        state: ReplyState;
        step_id: string | null;
        actor: string;
        connection_id: string | null;
        address_display: string | null;
        text_sha256: string;
      }>(
        `SELECT id, state, step_id, actor, connection_id, address_display, text_sha256 FROM origin_replies
         WHERE org_id = $1 AND id = (SELECT reply_id FROM approvals WHERE org_id = $1 AND id = $2) AND approval_id = $2 FOR UPDATE`,
        [orgId, approvalId],
      );
      const r = rows[0];
      if (!r) return undefined;
      return {
        kind: "approval",
        reply: {
          id: r.id,
          state: r.state,
          stepId: r.step_id,
          actor: r.actor,
          connectionId: r.connection_id,
          addressDisplay: r.address_display,
          textSha256: r.text_sha256,
        },
      };
    },
  };
}

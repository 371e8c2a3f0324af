/**
 * Foreign hops the coordinator gave up on without re-sending (a hop to an agent not registered `idempotent` that
 * timed out, or whose task the agent failed, while the step had retries left: step error FOREIGN_NOT_RETRIED, decided
 * in src/core/decide.ts), shown to SREs beside the bus's dead letters (`switchyard dlq list`,
 * AdminService/ListDeadLetters) under the stream name `foreign:KEY`.
 *
 * They live in Postgres, not in a Redis dead-letter stream: the record is the failed step and its bridge, written in
 * the same transaction as the decision, so it cannot be lost between commit and a Redis write. They cannot be
 * replayed — a re-send would open a new task at the agent, which is exactly what was refused; start a new task (or
 * register the agent `idempotent`) instead.
 */
import type { DeadLetterView } from "../bus/dead-letters.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Queryable } from "../store/db.js";

export const FOREIGN_NOT_RETRIED = "FOREIGN_NOT_RETRIED";

export function isForeignStream(stream: string): boolean {
  return stream.startsWith("foreign:");
}

/** Oldest first; `stream` (`foreign:KEY`) narrows to one agent key (of any tenant). */
export async function listForeignDeadLetters(db: Queryable, options: { stream?: string; limit: number }): Promise<DeadLetterView[]> {
  const agentKey = options.stream !== undefined && isForeignStream(options.stream) ? options.stream.slice("foreign:".length) : null;
  const { rows } = await db.query<{ id: string; org_id: string; task_id: string; step_id: string; agent_key: string; attempt: number; message: string | null; at: Date; bytes: number }>(
    `SELECT b.id, b.org_id, b.task_id, b.step_id, b.agent_key, b.attempt, s.error ->> 'message' AS message, s.updated_at AS at,
            octet_length(b.request::text) AS bytes
     FROM steps s JOIN a2a_bridge b ON b.task_id = s.task_id AND b.step_id = s.step_id AND b.attempt = s.attempt
     WHERE s.status = 'failed' AND (s.error ->> 'code') = '${FOREIGN_NOT_RETRIED}' AND ($2::text IS NULL OR b.agent_key = $2)
     ORDER BY s.updated_at LIMIT $1`,
    [options.limit, agentKey],
  );
  return rows.map((row) => ({
    stream: `foreign:${row.agent_key}`,
    id: row.id,
    originalId: row.id,
    reason: `${FOREIGN_NOT_RETRIED}: ${row.message ?? ""}`,
    deliveries: row.attempt,
    atMs: row.at.getTime(),
    bytes: row.bytes,
    envelope: { id: row.id, kind: "WORK", orgId: row.org_id, taskId: row.task_id, stepId: row.step_id },
  }));
}

/** Replay is refused for foreign streams: see the module comment. */
export function refuseForeignReplay(stream: string): void {
  if (!isForeignStream(stream)) return;
  throw new SwitchyardError(
    ErrorCode.FailedPrecondition,
    `${stream}: a foreign hop is never replayed (a re-send opens a new task at the agent and can repeat its effects); start a new task, or register the agent idempotent so its steps' retries re-send`,
    { details: { path: "stream", reason: "FOREIGN_NOT_REPLAYABLE" } },
  );
}

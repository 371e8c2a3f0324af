/**
 * Postgres adapter of the harness's TurnCheck port: a turn is current while its step row is dispatched on the same
 * attempt and turn. Read with org_id in the WHERE clause (the tenant boundary), like the result reader.
 */
import type { TurnCheck, TurnRef } from "../harness/turn-check.js";
import type { Queryable } from "./db.js";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function createStepTurnCheck(options: { db: Queryable }): TurnCheck {
  const { db } = options;
  return {
    async isCurrent(ref: TurnRef): Promise<boolean> {
      // task_id is a uuid column: a non-uuid would make Postgres raise. No such step: let the coordinator decide.
      if (!UUID_RE.test(ref.taskId)) return true;
      const result = await db.query<{ status: string; attempt: number; turns: number }>(
        "SELECT status, attempt, turns FROM steps WHERE org_id = $1 AND task_id = $2 AND step_id = $3",
        [ref.orgId, ref.taskId, ref.stepId],
      );
      const row = result.rows[0];
      if (!row) return true;
      return row.status === "dispatched" && row.attempt === ref.attempt && row.turns === ref.turn;
    },
  };
}

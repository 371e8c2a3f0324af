/**
 * Postgres adapter of the harness's ResultReader port: reads a completed step's output, scoped to one tenant.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { ResultReader } from "../harness/result-reader.js";
import { parseStepResultRef } from "../harness/result-reader.js";
import type { Queryable } from "./db.js";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function createStepResultReader(options: { db: Queryable }): ResultReader {
  const { db } = options;
  return {
    async read(orgId: string, ref: string): Promise<unknown> {
      const parsed = parseStepResultRef(ref);
      if (!parsed) {
        throw new SwitchyardError(ErrorCode.InvalidArgument, `result reference ${JSON.stringify(ref)} is not step:<taskId>/<stepId>`, {
          details: { ref },
        });
      }
      const notFound = new SwitchyardError(ErrorCode.NotFound, `no completed result for ${ref}`, { details: { ref } });
      // task_id is a uuid column; a non-uuid would make Postgres raise instead of simply finding nothing.
      if (!UUID_RE.test(parsed.taskId)) throw notFound;
      // org_id in the WHERE clause is the tenant boundary: another tenant's reference reads as absent.
      const result = await db.query<{ output: unknown }>(
        "SELECT output FROM steps WHERE org_id = $1 AND task_id = $2 AND step_id = $3 AND status = 'completed'",
        [orgId, parsed.taskId, parsed.stepId],
      );
      const row = result.rows[0];
      if (!row) throw notFound;
      return row.output ?? null;
    },
  };
}

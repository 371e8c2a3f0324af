/**
 * The one place a connection's secret is opened, for the reply path's dial. Whoever calls it must send the result
 * only to the connection's API base URL and must never log, return or audit it.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Queryable } from "../store/db.js";
import type { SecretCipher } from "./secret-cipher.js";
import { connectionAad } from "./connection-record.js";
import { isUuid } from "../domain.js";

export async function openConnectionSecret(db: Queryable, cipher: SecretCipher, orgId: string, connectionId: string): Promise<string> {
  const { rows } = isUuid(connectionId)
    ? await db.query<{ secret_ciphertext: string }>("SELECT secret_ciphertext FROM connections WHERE org_id = $1 AND id = $2", [orgId, connectionId])
    : { rows: [] };
  const row = rows[0];
  if (!row) throw new SwitchyardError(ErrorCode.NotFound, `no connection ${connectionId} for tenant ${orgId}`, { details: { orgId, connectionId } });
  return cipher.open(row.secret_ciphertext, connectionAad(connectionId));
}

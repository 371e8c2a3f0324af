/**
 * The one place a connection's secret is opened, for the reply path's dial. Whoever calls it must send the result
 * only to the connection's API base URL and must never log, return or audit it.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Queryable } from "../store/db.js";
import type { ConnectionStore } from "../store/vault/connection-store.js";
import type { SecretCipher } from "./secret-cipher.js";
import { connectionAad } from "./connection-record.js";
import { isUuid } from "../domain.js";

export async function openConnectionSecret(connections: Pick<ConnectionStore, "sealedSecret">, db: Queryable, cipher: SecretCipher, orgId: string, connectionId: string): Promise<string> {
  const sealed = isUuid(connectionId) ? await connections.sealedSecret(db, orgId, connectionId) : undefined;
  if (sealed === undefined) throw new SwitchyardError(ErrorCode.NotFound, `no connection ${connectionId} for tenant ${orgId}`, { details: { orgId, connectionId } });
  return cipher.open(sealed, connectionAad(connectionId));
}

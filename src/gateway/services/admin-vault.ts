/**
 * AdminService.RewrapSecrets: re-seals stored tenant secrets with the current key — the operator's
 * `switchyard vault rewrap`. It runs with the key ring of the process serving the call (ServiceDeps.cipher, from
 * its SWITCHYARD_SECRET_ENCRYPTION_KEY): in the CLI's direct mode that is the CLI's own environment, as it always
 * was; through a gateway, the gateway's.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { AdminService } from "../../gen/switchyard/api/v1/admin_pb.js";
import { rewrapSecrets } from "../../vault/rewrap.js";
import { requireCipher } from "../../vault/secret-cipher.js";
import { adminCall } from "../auth.js";
import type { ServiceDeps } from "./deps.js";

export type AdminVaultHandlers = Pick<ServiceImpl<typeof AdminService>, "rewrapSecrets">;

export function adminVaultHandlers(deps: ServiceDeps): AdminVaultHandlers {
  return {
    async rewrapSecrets(req, ctx) {
      const admin = adminCall(ctx);
      const cipher = requireCipher(deps.cipher, "re-sealing secrets");
      const orgId = req.orgId.trim() || undefined;
      const result = await rewrapSecrets(deps.stores.sealedSecrets, deps.pool, cipher, orgId ? { orgId } : {});
      deps.logger.info({ orgId, keyId: result.keyId, connections: result.connections, ingestSecrets: result.ingestSecrets, key: admin.keyPrefix }, "secrets re-sealed through the admin API");
      return result;
    },
  };
}

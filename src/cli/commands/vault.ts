/**
 * `switchyard vault rewrap [--tenant T] [--json]` — after putting a new key first in SWITCHYARD_SECRET_ENCRYPTION_KEY,
 * re-seals every stored secret (connections, ingest endpoints) still sealed with an older key. Prints counts, never
 * a secret. Through AdminService.RewrapSecrets (remote/admin-api.ts), which runs with the key ring of the process
 * serving it: in direct mode, in-process, so this process's SWITCHYARD_SECRET_ENCRYPTION_KEY, as always.
 */
import type { Command } from "commander";
import type { ActionRunner } from "../action.js";
import { withAdminApi } from "../remote/admin-api.js";

export function registerVaultCommands(program: Command, run: ActionRunner): void {
  const vault = program.command("vault").description("the encryption of stored tenant secrets");

  /** `vault rewrap [--tenant T] [--json]` — JSON: `{"keyId","connections","ingestSecrets"}` (how many were re-sealed). */
  vault
    .command("rewrap")
    .description("re-seal every connection and ingest secret not sealed with the current key (the first of SWITCHYARD_SECRET_ENCRYPTION_KEY)")
    .option("--tenant <tenant>", "only this tenant's secrets")
    .option("--json", "print the counts as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; json?: boolean }) => {
        const orgId = options.tenant?.trim() || undefined;
        const result = await withAdminApi(ctx, (api) => api.rewrapSecrets(orgId ? { orgId } : {}));
        if (options.json) return ctx.printJson(result);
        ctx.print(`re-sealed ${result.connections} connection secret(s) and ${result.ingestSecrets} ingest secret(s) with key ${result.keyId}${orgId ? ` for tenant ${orgId}` : ""}`);
      }),
    );
}

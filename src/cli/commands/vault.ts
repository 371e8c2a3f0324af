/**
 * `switchyard vault rewrap [--tenant T] [--json]` — after putting a new key first in SWITCHYARD_SECRET_ENCRYPTION_KEY,
 * re-seals every stored secret (connections, ingest endpoints) still sealed with an older key. Operator path:
 * straight against the database with this process's key ring. Prints counts, never a secret.
 */
import type { Command } from "commander";
import type { ActionRunner } from "../action.js";

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
        const { createSecretCipher, requireCipher } = await import("../../vault/secret-cipher.js");
        const { rewrapSecrets } = await import("../../vault/rewrap.js");
        const { createPostgresSealedSecretStore } = await import("../../store/vault/postgres-sealed-secret-store.js");
        const cipher = requireCipher(createSecretCipher(ctx.config.origin.encryptionKeys), "re-sealing secrets");
        const orgId = options.tenant?.trim() || undefined;
        const result = await ctx.withPool((pool) => rewrapSecrets(createPostgresSealedSecretStore(), pool, cipher, orgId ? { orgId } : {}));
        if (options.json) return ctx.printJson(result);
        ctx.print(`re-sealed ${result.connections} connection secret(s) and ${result.ingestSecrets} ingest secret(s) with key ${result.keyId}${orgId ? ` for tenant ${orgId}` : ""}`);
      }),
    );
}

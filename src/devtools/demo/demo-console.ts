/**
 * The demo's last act: the console. A fresh sign-in key for the demo tenant (the previous demo run's key is
 * revoked, so reruns do not pile keys up), the URL to open, and — with `--keep-running` — the gateway kept up until
 * Ctrl-C so a newcomer can look at the task they just watched. Without the flag the demo exits as it always did
 * (CI runs it without a terminal and needs it to end by itself).
 */
import { findConsoleDir } from "../../gateway/console/static-route.js";
import type { Pool } from "../../store/db.js";
import type { Stores } from "../../store/stores.js";
import { createApiKey, listApiKeys, revokeApiKey } from "../../tenancy/api-keys.js";
import { createTenant, getTenant } from "../../tenancy/tenants.js";

/** The name of the key the demo prints; one live at a time per tenant. */
export const DEMO_CONSOLE_KEY_NAME = "console (demo)";

/** Creates the demo tenant's console key, revoking the one an earlier run printed. Returns the secret. */
export async function issueDemoConsoleKey(stores: Pick<Stores, "tenants" | "apiKeys">, pool: Pool, tenant: string): Promise<string> {
  if (!(await getTenant(stores.tenants, pool, tenant))) await createTenant(stores.tenants, pool, { orgId: tenant, name: tenant });
  for (const key of await listApiKeys(stores.apiKeys, pool, { orgId: tenant })) {
    if (key.name === DEMO_CONSOLE_KEY_NAME && key.revokedAt === null) await revokeApiKey(stores.apiKeys, pool, key.id);
  }
  return (await createApiKey(stores.apiKeys, pool, { kind: "tenant", orgId: tenant, name: DEMO_CONSOLE_KEY_NAME })).secret;
}

export interface DemoConsoleOptions {
  pool: Pool;
  /** The tenancy ports (the demo runtime's `stores`). */
  stores: Pick<Stores, "tenants" | "apiKeys">;
  tenant: string;
  /** The demo gateway's base URL. */
  gatewayUrl: string;
  taskId: string;
  keepRunning: boolean;
  say(line?: string): void;
  /** Ends the wait of `--keep-running` (Ctrl-C). */
  signal?: AbortSignal;
}

export async function offerDemoConsole(options: DemoConsoleOptions): Promise<void> {
  const { say } = options;
  const key = await issueDemoConsoleKey(options.stores, options.pool, options.tenant);
  const url = `${options.gatewayUrl}/console/`;
  say(`9. The console: ${url}`);
  say(`   sign in with this API key for tenant "${options.tenant}" (shown once; the next demo run revokes it):`);
  say(`   ${key}`);
  say(`   then open Tasks → ${options.taskId} to see the steps, their attempts and the audit rows of the run above`);
  if (!(await findConsoleDir())) say("   (the console is not built in this checkout: run `npm run build` first)");
  if (!options.keepRunning) {
    say("   the demo's gateway stops when the demo exits: run `npm run demo -- --keep-running` to keep it up");
    return;
  }
  say("   the gateway, coordinator and workers keep running for the console; press Ctrl-C to stop");
  const signal = options.signal;
  if (!signal || signal.aborted) return;
  await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

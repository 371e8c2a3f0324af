/**
 * What the browser suite drives: the demo's stack (coordinator, the four example workers, the gateway serving the
 * console, and the local A2A fact-checker registered for the tenant) on a scratch database and key prefix, with
 * the demo workflow submitted, a tenant key and an admin key, and one dead letter to replay.
 */
import { createPostgresStores } from "../../src/store/postgres-stores.js";
import { spawnSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { DEMO_ACTOR, DEMO_DELEGATING_ROLES, DEMO_ROLES, DEMO_WORKFLOW_PATH } from "../../src/devtools/demo/run-demo.js";
import { switchOnDemoFlags } from "../../src/devtools/demo/demo-flags.js";
import { registerDemoAgent, startDemoAgent } from "../../src/devtools/demo/demo-foreign.js";
import { startDemoStack, type DemoStack } from "../../src/devtools/demo/demo-stack.js";
import { createLogger } from "../../src/logger.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { createApiKey } from "../../src/tenancy/api-keys.js";
import { createTenantWithKey } from "../../src/tenancy/bootstrap.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { uniquePrefix } from "../support/redis.js";
import { testConfig } from "../support/runtime.js";

const stores = createPostgresStores();

export const TENANT = "demo";
/** A stream no worker reads: the dead letter the suite replays lives there. */
export const DEAD_STREAM = "role:console-nobody";

export interface ConsoleStack {
  stack: DemoStack;
  /** The console's address: `<gateway>/console/`. */
  consoleUrl: string;
  tenantKey: string;
  adminKey: string;
  workflowRef: string;
  /** Entries left on the dead-letter stream and on the stream it replays onto. */
  deadLetterCounts(): Promise<{ dead: number; live: number }>;
  close(): Promise<void>;
}

/** Builds web/ into dist/console/ (a few seconds), so the suite tests the app as it is in the tree. */
export function buildConsole(): void {
  const root = fileURLToPath(new URL("../../", import.meta.url));
  const built = spawnSync(process.execPath, ["scripts/build-console.mjs"], { cwd: root, encoding: "utf8" });
  if (built.status !== 0) throw new Error(`building the console failed (exit ${built.status}):\n${built.stdout}\n${built.stderr}`);
}

export async function startConsoleStack(): Promise<ConsoleStack> {
  const db: TestDatabase = await createTestDatabase();
  const prefix = uniquePrefix();
  const logger = createLogger({ level: "warn" });
  const agent = await startDemoAgent(logger);
  let stack: DemoStack;
  try {
    stack = await startDemoStack({ config: testConfig(db, prefix), logger, roles: DEMO_ROLES });
  } catch (error) {
    await agent.close();
    await db.drop();
    throw error;
  }
  const close = async () => {
    await stack.stop();
    await agent.close();
    await db.drop();
  };
  try {
    const { pool, flags, redis } = stack.runtime;
    const tenantKey = (await createTenantWithKey(stores, pool, { orgId: TENANT, name: "Demo tenant" })).apiKey.secret;
    const adminKey = (await createApiKey(stores.apiKeys, pool, { kind: "admin", name: "console-sre" })).secret;
    await switchOnDemoFlags({ pool, flags, tenant: TENANT, roles: DEMO_ROLES, delegatingRoles: DEMO_DELEGATING_ROLES, egress: true, actor: DEMO_ACTOR });
    await registerDemoAgent(stores.foreignAgents, pool, TENANT, agent.baseUrl);
    const definition = parseWorkflowDefinition(await readFile(DEMO_WORKFLOW_PATH, "utf8"), { format: "yaml" });
    const workflowRef = (await submitWorkflow(pool, TENANT, definition)).ref;

    // The bus dead-letters an entry that does not decode as soon as a consumer reads it.
    const bus = createRedisBus({ redis, keyPrefix: prefix, maxPayloadBytes: 1024 * 1024, maxDeliveries: 5 });
    await bus.ensureGroup(DEAD_STREAM, "console-test");
    await redis.xadd(`${prefix}{${DEAD_STREAM}}`, "*", "e", "not protobuf");
    await bus.read({ stream: DEAD_STREAM, group: "console-test", consumer: "c", count: 10, blockMs: 0 });
    const deadLetterCounts = async () => ({ dead: await redis.xlen(`${prefix}{${DEAD_STREAM}}:dead`), live: await redis.xlen(`${prefix}{${DEAD_STREAM}}`) });
    return { stack, consoleUrl: `${stack.gateway.url}/console/`, tenantKey, adminKey, workflowRef, deadLetterCounts, close };
  } catch (error) {
    await close();
    throw error;
  }
}

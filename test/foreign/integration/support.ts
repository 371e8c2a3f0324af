/**
 * A runtime with FOREIGN over A2A switched on for tests: egress ON for every tenant, loopback admitted by the operator
 * CIDR list (as `SWITCHYARD_EGRESS_ALLOWED_NETWORKS=127.0.0.0/8` would), the callback route served by a plain HTTP
 * server on 127.0.0.1:0 whose URL is the runtime's public URL, and a coordinator running the sender and the sweep.
 */
import { heldStepReleases } from "../../../src/fairness/releaser.js";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { defaultConfig, type Config } from "../../../src/config/index.js";
import { Coordinator } from "../../../src/coordinator/coordinator.js";
import { coordinatorOptionsFrom } from "../../../src/coordinator-process.js";
import { createLogger } from "../../../src/logger.js";
import { createRuntime, type Runtime } from "../../../src/runtime.js";
import { handleA2ACallback } from "../../../src/foreign/callback-route.js";
import { registerForeignAgent, type ForeignAgentInput } from "../../../src/foreign/registry.js";
import { submitWorkflow } from "../../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../../src/workflow/definition.js";
import { createTestDatabase, type TestDatabase } from "../../support/db.js";
import { deleteByPrefix, uniquePrefix } from "../../support/redis.js";
import { testConfig, type TestRuntime } from "../../support/runtime.js";
import { waitForTask } from "../../support/wait.js";
import type { TaskView } from "../../../src/tasks/tasks.js";

export interface ForeignTestRuntime extends Runtime {
  db: TestDatabase;
  prefix: string;
  publicUrl: string;
  startCoordinator(): Coordinator;
  register(orgId: string, input: Partial<ForeignAgentInput> & { agentKey: string; baseUrl: string }): Promise<void>;
  submit(orgId: string, yaml: string): Promise<void>;
  /** Waits while the task keeps moving; fails naming its steps when nothing moved for `stallMs`. */
  finished(orgId: string, taskId: string, stallMs?: number): Promise<TaskView>;
  cleanup(): Promise<void>;
}

export async function createForeignRuntime(
  foreign: Partial<Config["foreign"]> = {},
  coordinator: Partial<Config["coordinator"]> = {},
  bus: Partial<Config["bus"]> = {},
): Promise<ForeignTestRuntime> {
  const db = await createTestDatabase();
  const prefix = uniquePrefix();
  let runtime: Runtime | undefined;
  const server: Server = createServer((req, res) => {
    if (!runtime?.a2a) {
      res.writeHead(503).end();
      return;
    }
    void handleA2ACallback(req, res, runtime.a2a.callback).then((handled) => {
      if (!handled) res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const publicUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const base = testConfig(db, prefix, coordinator, bus, undefined, { egressEnabled: true, egressTenants: "*" });
  const config: Config = {
    ...base,
    gateway: { ...defaultConfig.gateway, publicUrl },
    foreign: {
      ...defaultConfig.foreign,
      allowedNetworks: ["127.0.0.0/8"],
      connectTimeoutMs: 2_000,
      totalTimeoutMs: 5_000,
      retries: 2,
      retryBaseMs: 20,
      sweepAfterMs: 60_000,
      sweepIntervalMs: 100,
      callbackMaxBytes: 64 * 1024,
      ...foreign,
    },
  };
  const logger = process.env.TEST_LOG ? createLogger({ level: process.env.TEST_LOG }) : undefined;
  runtime = await createRuntime(config, { logger });
  const rt = runtime;
  const coordinators: Coordinator[] = [];
  return {
    ...rt,
    db,
    prefix,
    publicUrl,
    startCoordinator() {
      const coordinator = coordinatorOf(rt, `test-${coordinators.length}`);
      coordinators.push(coordinator);
      void coordinator.start();
      return coordinator;
    },
    async register(orgId, input) {
      const host = new URL(input.baseUrl);
      await registerForeignAgent(rt.stores.foreignAgents, rt.pool, orgId, { allowHost: `${host.hostname}:${host.port}`, skills: ["echo"], ...input });
    },
    async submit(orgId, yaml) {
      await submitWorkflow(rt.pool, orgId, parseWorkflowDefinition(yaml));
    },
    async finished(orgId, taskId, stallMs) {
      return waitForTask(rt.tasks, orgId, taskId, stallMs === undefined ? {} : { stallMs });
    },
    async cleanup() {
      await Promise.all(coordinators.map((c) => c.close()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await deleteByPrefix(rt.redis, prefix).catch(() => {});
      await rt.close();
      await db.drop();
    },
  };
}

/** A coordinator over `runtime` (its pool, bus, engine, dispatch limits and FOREIGN jobs), as a coordinator process builds one; not started. */
export function coordinatorOf(runtime: Runtime, consumer: string): Coordinator {
  // Limits as a coordinator process has them (src/coordinator-process.ts): without, a held step would never be released.
  return new Coordinator(coordinatorOptionsFrom(runtime, { consumer, releases: heldStepReleases(runtime.limits, runtime.stores.heldSteps), checkpoints: false, background: runtime.foreignJobs }));
}

/** Posts a push body to a callback URL as an agent would. */
export async function postPush(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/a2a+json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

export type { TestRuntime };

/**
 * Runs the CLI in-process against a test database and a unique Redis prefix, capturing its output.
 */
import { createPostgresStores } from "../../src/store/postgres-stores.js";
import { TEST_BUS_SECRET_ENV } from "../support/bus-auth.js";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/cli/main.js";
import { createTenant } from "../../src/tenancy/tenants.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { FLAGS_ON_ENV, redisUrl } from "../support/env.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";

const stores = createPostgresStores();

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout split into lines, without the trailing empty one. */
  lines: string[];
  /** The last stdout line. */
  last: string;
}

function sink() {
  let text = "";
  return {
    write(chunk: string) {
      text += chunk;
      return true;
    },
    get text() {
      return text;
    },
  };
}

export interface CliEnvironment {
  db: TestDatabase;
  redis: TestRedis;
  env: Record<string, string>;
  /** A scratch directory for files the tests write; the CLI's cwd. */
  dir: string;
  /** `env` adds to (or overrides) the environment's variables for this run only. */
  run(argv: string[], options?: { signal?: AbortSignal; env?: Record<string, string> }): Promise<CliRun>;
  /** Writes a file into `dir` and returns its name (relative to the CLI's cwd). */
  file(name: string, text: string): Promise<string>;
  cleanup(): Promise<void>;
}

export interface CliEnvironmentOptions {
  /** Tenants created up front (what an operator does first: `switchyard tenant create`). @defaultValue ["acme"] */
  tenants?: readonly string[];
}

export async function createCliEnvironment(options: CliEnvironmentOptions = {}): Promise<CliEnvironment> {
  const db = await createTestDatabase();
  for (const orgId of options.tenants ?? ["acme"]) await createTenant(stores.tenants, db.pool, { orgId, name: orgId });
  const redis = await createTestRedis();
  const dir = await mkdtemp(join(tmpdir(), "sy-cli-"));
  const env = { ...FLAGS_ON_ENV, SWITCHYARD_BUS_SECRET: TEST_BUS_SECRET_ENV, DATABASE_URL: db.url, REDIS_URL: redisUrl(), SWITCHYARD_KEY_PREFIX: redis.prefix, SWITCHYARD_LOG_LEVEL: "warn" };
  return {
    db,
    redis,
    env,
    dir,
    async run(argv, options = {}) {
      const stdout = sink();
      const stderr = sink();
      const code = await runCli(argv, { env: { ...env, ...options.env }, stdout, stderr, cwd: dir, handleSignals: false, ...(options.signal ? { signal: options.signal } : {}) });
      const lines = stdout.text.split("\n");
      if (lines.at(-1) === "") lines.pop();
      return { code, stdout: stdout.text, stderr: stderr.text, lines, last: lines.at(-1) ?? "" };
    },
    async file(name, text) {
      await writeFile(join(dir, name), text);
      return name;
    },
    async cleanup() {
      await redis.cleanup();
      await db.drop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A one-step workflow whose only step asks for an approval: a task of it parks at once, no worker needed. */
export const APPROVAL_WORKFLOW = `
name: needs-approval
steps:
  - id: ship
    to: role:publisher
    approval: true
`;

/** A one-step workflow for tasks that simply wait in the queue (no worker runs in these tests). */
export const ONE_STEP_WORKFLOW = `
name: one-step
description: a single echo step
budget: 10
steps:
  - id: only
    to: role:echo
    cost_estimate: 1.5
`;

/**
 * The wiring: with an encryption key, a coordinator built from the runtime (coordinator-process.ts) dials pending
 * replies in its background jobs; without one, `runtime.replies` changes no row and says once why.
 */
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { defaultConfig, type Config } from "../../src/config/index.js";
import { createCoordinator } from "../../src/coordinator-process.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import { createSecretCipher } from "../../src/vault/secret-cipher.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { startProviderStub, type ProviderStub } from "../support/provider-stubs.js";
import { testConfig } from "../support/runtime.js";
import { deleteByPrefix, uniquePrefix } from "../support/redis.js";
import { GITHUB_ADDRESS, captureLogger, insertReply, insertTask, newTenant, readReply } from "./sender-support.js";

describe("runtime.replies", () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup(withKey: boolean): Promise<{ db: TestDatabase; runtime: Runtime; stub: ProviderStub; lines: string[]; key: { id: string; key: Buffer } }> {
    const db = await createTestDatabase();
    const prefix = uniquePrefix();
    const key = { id: "rt1", key: randomBytes(32) };
    // REPLY_ENABLED is checked again at dial time: on for every tenant here.
    const base = testConfig(db, prefix, {}, {}, undefined, { replyEnabled: true, replyTenants: "*" });
    const config: Config = {
      ...base,
      origin: { ...defaultConfig.origin, encryptionKeys: withKey ? [key] : [], replyTimeoutMs: 2_000 },
      foreign: { ...defaultConfig.foreign, allowedNetworks: ["127.0.0.0/8"] },
    };
    const { logger, lines } = captureLogger();
    const runtime = await createRuntime(config, { logger });
    const stub = await startProviderStub("github", { token: "ghp_runtime_token" });
    cleanups.push(async () => {
      await deleteByPrefix(runtime.redis, prefix).catch(() => {});
      await runtime.close();
      await stub.close();
      await db.drop();
    });
    return { db, runtime, stub, lines, key };
  }

  async function pendingReply(db: TestDatabase, apiBaseUrl: string, key: { id: string; key: Buffer }): Promise<string> {
    const org = await newTenant(db.pool);
    const cipher = createSecretCipher([key])!;
    const id = (await db.pool.query<{ id: string }>("SELECT gen_random_uuid()::text AS id")).rows[0]!.id;
    await db.pool.query(
      `INSERT INTO connections (id, org_id, kind, account_key, api_base_url, secret_ciphertext, secret_fingerprint, created_by)
       VALUES ($1, $2, 'github', 'github.com', $3, $4, $5, 'test')`,
      [id, org, apiBaseUrl, cipher.seal("ghp_runtime_token", `connection:${id}`), cipher.fingerprint("ghp_runtime_token")],
    );
    return insertReply(db.pool, { org, taskId: await insertTask(db.pool, org, GITHUB_ADDRESS), connectionId: id, text: "from the coordinator" });
  }

  it("a coordinator of the runtime dials pending replies among its background jobs", async () => {
    const { db, runtime, stub, key } = await setup(true);
    const replyId = await pendingReply(db, stub.apiBaseUrl, key);
    const coordinator = createCoordinator(runtime, { consumer: "replies-test" });
    void coordinator.start();
    try {
      let row = await readReply(db.pool, replyId);
      for (let i = 0; i < 200 && row.state !== "sent"; i++) {
        await new Promise((r) => setTimeout(r, 25));
        row = await readReply(db.pool, replyId);
      }
      expect(row.state).toBe("sent");
      expect(stub.requests).toHaveLength(1);
      expect(stub.requests[0]!.headers.authorization).toBe("token ghp_runtime_token");
    } finally {
      await coordinator.close();
    }
  });

  it("without SWITCHYARD_SECRET_ENCRYPTION_KEY nothing is dialed or changed, and it says so once", async () => {
    const { db, runtime, stub, lines, key } = await setup(false);
    const replyId = await pendingReply(db, stub.apiBaseUrl, key);
    expect(await runtime.replies.runOnce()).toBe(0);
    expect(await runtime.replies.runOnce()).toBe(0);
    expect(await readReply(db.pool, replyId)).toMatchObject({ state: "pending", dial_attempts: 0 });
    expect(stub.requests).toHaveLength(0);
    expect(lines.filter((l) => l.includes("SWITCHYARD_SECRET_ENCRYPTION_KEY"))).toHaveLength(1);
  });
});

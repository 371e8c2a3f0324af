import { TEST_BUS_SECRETS, testBusAuth } from "../support/bus-auth.js";
import { afterEach, describe, expect, it } from "vitest";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { EnvelopeKind, ResultStatus, type Envelope } from "../../src/bus/codec.js";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { defaultConfig, type Config } from "../../src/config/index.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { silentLogger } from "../../src/logger.js";
import { loadHandler, runHarnessProcess } from "../../src/harness/process.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { redisUrl } from "../support/env.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";
import { json, workEnvelope } from "./fixtures.js";

async function configError(promise: Promise<unknown>): Promise<SwitchyardError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SwitchyardError);
    expect((error as SwitchyardError).code).toBe(ErrorCode.Config);
    return error as SwitchyardError;
  }
  throw new Error("expected a CONFIG error");
}

describe("loadHandler", () => {
  it("imports a handler module relative to the working directory", async () => {
    const handler = await loadHandler("examples/handlers/echo.ts", process.cwd());
    expect(typeof handler).toBe("function");
  });

  it("refuses a module whose default export is not a function", async () => {
    const error = await configError(loadHandler("examples/handlers/topic.ts"));
    expect(error.message).toMatch(/must default-export a function.*missing/);
  });

  it("refuses a path that does not load", async () => {
    const error = await configError(loadHandler("examples/handlers/no-such-handler.ts"));
    expect(error.message).toMatch(/cannot load handler module .*no-such-handler\.ts/);
  });
});

describe("runHarnessProcess", () => {
  let redis: TestRedis | undefined;
  let db: TestDatabase | undefined;
  afterEach(async () => {
    await redis?.cleanup();
    await db?.drop();
  });

  it("fails fast with CONFIG for a bad handler path, before connecting anything", async () => {
    const config: Config = { ...defaultConfig, redisUrl: "redis://127.0.0.1:1", databaseUrl: "postgres://nobody@127.0.0.1:1/none", busAuth: { secrets: TEST_BUS_SECRETS, publisherKeys: [] } };
    expect((await configError(runHarnessProcess({ config, role: "echo", handlerPath: "nope.ts", logger: silentLogger }))).message).toMatch(/nope\.ts/);
    await configError(runHarnessProcess({ config, handlerPath: "examples/handlers/echo.ts", logger: silentLogger }));
  });

  it("refuses to start without a bus key for its own queue, before connecting anything", async () => {
    const base: Config = { ...defaultConfig, redisUrl: "redis://127.0.0.1:1", databaseUrl: "postgres://nobody@127.0.0.1:1/none" };
    const none = await configError(runHarnessProcess({ config: base, role: "echo", handlerPath: "examples/handlers/echo.ts", logger: silentLogger }));
    expect(none.message).toMatch(/no bus key to publish as role:echo: set SWITCHYARD_BUS_KEY/);
    const otherQueue = { ...base, busAuth: { secrets: [], publisherKeys: [testBusAuth().publisherKey("role:writer")] } };
    const wrong = await configError(runHarnessProcess({ config: otherQueue, role: "echo", handlerPath: "examples/handlers/echo.ts", logger: silentLogger }));
    expect(wrong.message).toMatch(/this process has a key for role:writer/);
  });

  it("serves a role with the handler module until its signal aborts, then closes its connections", async () => {
    redis = await createTestRedis();
    db = await createTestDatabase();
    const config: Config = {
      ...defaultConfig,
      redisUrl: redisUrl(),
      databaseUrl: db.url,
      bus: { ...defaultConfig.bus, keyPrefix: redis.prefix, blockMs: 100 },
      harness: { shutdownGraceMs: 1_000, heartbeatMs: 1_000 },
      // What an operator hands a standalone harness: only its own queue's key.
      busAuth: { secrets: [], publisherKeys: [testBusAuth().publisherKey("role:echo")] },
    };
    const listenersBefore = process.listenerCount("SIGTERM");
    const stop = new AbortController();
    const running = runHarnessProcess({ config, role: "echo", handlerPath: "examples/handlers/echo.ts", concurrency: 2, logger: silentLogger, signal: stop.signal });

    const bus = createRedisBus({ redis: redis.redis, keyPrefix: redis.prefix, maxPayloadBytes: config.bus.maxPayloadBytes, maxDeliveries: 5 });
    await bus.ensureGroup(COORDINATOR_STREAM, "observer");
    const work = workEnvelope({ input: { hello: "world" } });
    await bus.publish([{ stream: "role:echo", envelope: work }]);
    const sent: Envelope[] = [];
    const deadline = Date.now() + 10_000;
    while (sent.length === 0 && Date.now() < deadline) {
      const entries = await bus.read({ stream: COORDINATOR_STREAM, group: "observer", consumer: "o", count: 10, blockMs: 100 });
      sent.push(...entries.map((e) => e.envelope));
    }
    stop.abort();
    await expect(running).resolves.toBeUndefined();
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ kind: EnvelopeKind.RESULT, status: ResultStatus.OK, taskId: work.taskId });
    expect(json(sent[0]!)).toEqual({ hello: "world" });
    expect(sent[0]!.auth).toMatchObject({ keyId: "test", sender: "role:echo" });
    expect(sent[0]!.usage?.cost).toBeCloseTo(0.1);
    expect(process.listenerCount("SIGTERM")).toBe(listenersBefore);
    await bus.close();
  });
});

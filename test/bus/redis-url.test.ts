/** REDIS_URL: one Redis or a cluster, validated at start-up with errors naming the variable. */
import { describe, expect, it } from "vitest";
import { parseRedisUrl, redactRedisUrl } from "../../src/bus/redis-url.js";
import { loadConfig } from "../../src/config/index.js";
import { ErrorCode } from "../../src/errors.js";

describe("REDIS_URL", () => {
  it("a single server stays a URL", () => {
    expect(parseRedisUrl("redis://:pw@host:6380/2")).toEqual({ kind: "single", url: "redis://:pw@host:6380/2" });
    expect(parseRedisUrl("rediss://host").kind).toBe("single");
  });

  it("a cluster lists its seed nodes, with credentials and TLS", () => {
    expect(parseRedisUrl("redis+cluster://127.0.0.1:7000,127.0.0.1:7001,redis-2.svc")).toEqual({
      kind: "cluster",
      nodes: [
        { host: "127.0.0.1", port: 7000 },
        { host: "127.0.0.1", port: 7001 },
        { host: "redis-2.svc", port: 6379 },
      ],
      tls: false,
    });
    expect(parseRedisUrl("rediss+cluster://switchyard:p%40ss@[::1]:7000/")).toEqual({
      kind: "cluster",
      nodes: [{ host: "::1", port: 7000 }],
      username: "switchyard",
      password: "p@ss",
      tls: true,
    });
  });

  it.each([
    ["http://host:6379", "must use"],
    ["redis+cluster://", "not host:port"],
    ["redis+cluster://a:7000,,b:7001", "not host:port"],
    ["redis+cluster://a:99999", "not host:port"],
    ["redis+cluster://a:7000/3", "no path"],
    ["redis://host:port", "is not a URL"],
  ])("refuses %s with a CONFIG error naming REDIS_URL", (url, why) => {
    let error: unknown;
    try {
      loadConfig({ REDIS_URL: url });
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: ErrorCode.Config, details: { variable: "REDIS_URL" } });
    expect((error as Error).message).toContain("REDIS_URL");
    expect((error as Error).message).toContain(why);
  });

  it("loadConfig keeps a valid cluster URL as given", () => {
    expect(loadConfig({ REDIS_URL: "redis+cluster://a:7000,b:7001" }).redisUrl).toBe("redis+cluster://a:7000,b:7001");
  });

  it("error messages do not show the password", () => {
    expect(redactRedisUrl("redis+cluster://user:secret@a:7000")).toBe("redis+cluster://user:***@a:7000");
    expect(() => parseRedisUrl("redis+cluster://user:secret@a:7000/9")).toThrow(/user:\*\*\*@/);
  });
});

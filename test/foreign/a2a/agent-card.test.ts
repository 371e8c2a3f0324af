import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AgentCardCache, type AgentCardCacheOptions } from "../../../src/foreign/a2a/agent-card.js";
import { ErrorCode, SwitchyardError } from "../../../src/errors.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { deadUrl, startRawServer, type RawServer } from "./http-fixtures.js";

/** A fetch that counts its calls and otherwise is the global one (tests only; production injects the guarded fetch). */
function countingFetch() {
  const calls: string[] = [];
  const fetchImpl: typeof fetch = (input, init) => {
    calls.push(String(input instanceof Request ? input.url : input));
    return fetch(input, init);
  };
  return { fetchImpl, calls };
}

function cache(options: Partial<AgentCardCacheOptions> = {}) {
  const { fetchImpl, calls } = countingFetch();
  return { cards: new AgentCardCache({ fetch: fetchImpl, ...options }), calls };
}

async function failure(promise: Promise<unknown>): Promise<SwitchyardError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SwitchyardError);
  return error as SwitchyardError;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((close) => close()));
});

async function agent(options: Parameters<typeof startA2AAgent>[0]): Promise<RunningA2AAgent> {
  const running = await startA2AAgent(options);
  cleanups.push(() => running.close());
  return running;
}

describe("AgentCardCache against real SDK agents", () => {
  it("fetches the card through the injected fetch and reads skills, push and the v1.0 endpoint", async () => {
    const v1 = await agent({ dialect: "1.0", skills: ["echo", "summarize"] });
    const { cards, calls } = cache();
    const card = await cards.get("org-a", "summarizer", { baseUrl: v1.baseUrl, requireSkill: "summarize" });
    expect(card).toMatchObject({
      orgId: "org-a",
      agentKey: "summarizer",
      cardUrl: v1.cardUrl,
      skills: ["echo", "summarize"],
      pushNotifications: true,
      protocol: "1.0",
      endpoints: { "1.0": { url: v1.rpcUrl } },
    });
    expect(calls).toEqual([v1.cardUrl]);
  });

  it("reads a v0.3-only agent's card as v0.3, honouring the registry preference", async () => {
    const old = await agent({ dialect: "0.3" });
    const { cards } = cache();
    expect((await cards.get("org-a", "old", { baseUrl: old.baseUrl, protocol: "auto" })).protocol).toBe("0.3");
    expect((await cards.get("org-a", "old", { baseUrl: old.baseUrl, protocol: "0.3" })).endpoints).toEqual({ "0.3": { url: old.rpcUrl } });
    const refused = await failure(cards.get("org-a", "old", { baseUrl: old.baseUrl, protocol: "1.0" }));
    expect(refused.code).toBe(ErrorCode.FailedPrecondition);
    expect(refused.details.reason).toBe("CARD_NO_PROTOCOL");
  });

  it("reads the SDK's superset v0.3 card (v0.3 fields plus embedded supportedInterfaces) as v0.3 only", async () => {
    const old = await agent({ dialect: "0.3", supersetCard: true });
    const { cards } = cache();
    const card = await cards.get("org-a", "old", { baseUrl: old.baseUrl });
    expect(card.endpoints).toEqual({ "0.3": { url: old.rpcUrl } });
  });

  it("serves repeated requests from the cache, per tenant and agent key", async () => {
    const v1 = await agent({ dialect: "1.0" });
    const { cards } = cache();
    await cards.get("org-a", "x", { baseUrl: v1.baseUrl });
    await cards.get("org-a", "x", { baseUrl: v1.baseUrl });
    expect(v1.cardRequests()).toBe(1);
    await cards.get("org-b", "x", { baseUrl: v1.baseUrl });
    await cards.get("org-a", "y", { baseUrl: v1.baseUrl });
    expect(v1.cardRequests()).toBe(3);
    expect(cards.size).toBe(3);
  });

  it("asks once for a burst of concurrent requests", async () => {
    const v1 = await agent({ dialect: "1.0" });
    const { cards } = cache();
    const all = await Promise.all(Array.from({ length: 8 }, () => cards.get("org-a", "x", { baseUrl: v1.baseUrl })));
    expect(all.every((card) => card.protocol === "1.0")).toBe(true);
    expect(v1.cardRequests()).toBe(1);
  });

  it("re-fetches after the TTL, on forceRefresh and when the registry's base URL changed", async () => {
    const v1 = await agent({ dialect: "1.0" });
    const other = await agent({ dialect: "1.0" });
    let now = 1_000_000;
    const { cards } = cache({ ttlMs: 60_000, now: () => now });
    const first = await cards.get("org-a", "x", { baseUrl: v1.baseUrl });
    expect(first.expiresAt).toBe(now + 60_000);
    now += 59_999;
    await cards.get("org-a", "x", { baseUrl: v1.baseUrl });
    expect(v1.cardRequests()).toBe(1);
    now += 1;
    await cards.get("org-a", "x", { baseUrl: v1.baseUrl });
    expect(v1.cardRequests()).toBe(2);
    await cards.get("org-a", "x", { baseUrl: v1.baseUrl, forceRefresh: true });
    expect(v1.cardRequests()).toBe(3);
    const moved = await cards.get("org-a", "x", { baseUrl: other.baseUrl });
    expect(moved.endpoints["1.0"]?.url).toBe(other.rpcUrl);
    expect(other.cardRequests()).toBe(1);
  });

  it("keeps at most maxEntries cards, evicting the least recently used", async () => {
    const v1 = await agent({ dialect: "1.0" });
    const { cards } = cache({ maxEntries: 2 });
    await cards.get("org", "a", { baseUrl: v1.baseUrl });
    await cards.get("org", "b", { baseUrl: v1.baseUrl });
    await cards.get("org", "a", { baseUrl: v1.baseUrl }); // a is now the most recent
    await cards.get("org", "c", { baseUrl: v1.baseUrl }); // evicts b
    expect(cards.size).toBe(2);
    expect(v1.cardRequests()).toBe(3);
    await cards.get("org", "a", { baseUrl: v1.baseUrl });
    expect(v1.cardRequests()).toBe(3);
    await cards.get("org", "b", { baseUrl: v1.baseUrl });
    expect(v1.cardRequests()).toBe(4);
  });

  it("re-fetches a cached card once on a capability mismatch and uses the fresh card", async () => {
    const v1 = await agent({ dialect: "1.0", skills: ["echo"], push: false });
    const { cards } = cache();
    await cards.get("org-a", "x", { baseUrl: v1.baseUrl, requirePush: false });
    v1.updateCard({ skills: ["echo", "translate"], push: true });
    const card = await cards.get("org-a", "x", { baseUrl: v1.baseUrl, requireSkill: "translate" });
    expect(card.skills).toContain("translate");
    expect(card.pushNotifications).toBe(true);
    expect(v1.cardRequests()).toBe(2);
    // The refreshed card is cached.
    await cards.get("org-a", "x", { baseUrl: v1.baseUrl, requireSkill: "translate" });
    expect(v1.cardRequests()).toBe(2);
  });

  it("fails closed with CARD_MISSING_SKILL: a fresh card is not re-fetched, a cached one exactly once", async () => {
    const v1 = await agent({ dialect: "1.0", skills: ["echo"] });
    const { cards } = cache();
    const fresh = await failure(cards.get("org-a", "x", { baseUrl: v1.baseUrl, requireSkill: ["echo", "translate"] }));
    expect(fresh.code).toBe(ErrorCode.FailedPrecondition);
    expect(fresh.details).toMatchObject({ reason: "CARD_MISSING_SKILL", orgId: "org-a", agentKey: "x" });
    expect(fresh.message).toContain("translate");
    expect(v1.cardRequests()).toBe(1);

    await cards.get("org-a", "x", { baseUrl: v1.baseUrl, requireSkill: "echo" });
    const cached = await failure(cards.get("org-a", "x", { baseUrl: v1.baseUrl, requireSkill: "translate" }));
    expect(cached.details.reason).toBe("CARD_MISSING_SKILL");
    expect(v1.cardRequests()).toBe(2);
  });

  it("fails closed with CARD_NO_PUSH for an agent without push notifications, unless push is not required", async () => {
    const v1 = await agent({ dialect: "1.0", push: false });
    const { cards } = cache();
    const error = await failure(cards.get("org-a", "x", { baseUrl: v1.baseUrl }));
    expect(error.code).toBe(ErrorCode.FailedPrecondition);
    expect(error.details.reason).toBe("CARD_NO_PUSH");
    expect((await cards.get("org-a", "x", { baseUrl: v1.baseUrl, requirePush: false })).pushNotifications).toBe(false);
  });

  it("fails closed with CARD_UNREACHABLE when nothing listens, and does not cache the failure", async () => {
    const { cards } = cache({ timeoutMs: 2_000 });
    const error = await failure(cards.get("org-a", "x", { baseUrl: await deadUrl() }));
    expect(error.code).toBe(ErrorCode.FailedPrecondition);
    expect(error.details.reason).toBe("CARD_UNREACHABLE");
    expect(cards.size).toBe(0);
  });

  it("fails closed with CARD_UNREACHABLE on a non-2xx answer and recovers when the agent does", async () => {
    const v1 = await agent({ dialect: "1.0" });
    const { cards } = cache();
    v1.failCard(503);
    const error = await failure(cards.get("org-a", "x", { baseUrl: v1.baseUrl }));
    expect(error.details).toMatchObject({ reason: "CARD_UNREACHABLE", status: 503 });
    v1.failCard(undefined);
    expect((await cards.get("org-a", "x", { baseUrl: v1.baseUrl })).protocol).toBe("1.0");
  });

  it("reports a refusal by the injected (guarded) fetch as CARD_UNREACHABLE, keeping its code", async () => {
    const refusing: typeof fetch = async () => {
      throw new SwitchyardError(ErrorCode.PolicyDenied, "egress to 10.0.0.1 refused", { details: { reason: "EGRESS_PRIVATE_ADDRESS" } });
    };
    const cards = new AgentCardCache({ fetch: refusing });
    const error = await failure(cards.get("org-a", "x", { baseUrl: "http://10.0.0.1" }));
    expect(error.details).toMatchObject({ reason: "CARD_UNREACHABLE", causeCode: ErrorCode.PolicyDenied });
    expect(error.cause).toBeInstanceOf(SwitchyardError);
  });

  it("stops waiting when the caller's signal aborts (CANCELLED)", async () => {
    const hanging = await startRawServer(() => {});
    cleanups.push(() => hanging.close());
    const { cards } = cache();
    const controller = new AbortController();
    const pending = cards.get("org-a", "x", { baseUrl: hanging.url, signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    const error = await failure(pending);
    expect(error.code).toBe(ErrorCode.Cancelled);
  });

  it("gives up on a card fetch after its timeout (CARD_UNREACHABLE)", async () => {
    const hanging = await startRawServer(() => {});
    cleanups.push(() => hanging.close());
    const { cards } = cache({ timeoutMs: 100 });
    const error = await failure(cards.get("org-a", "x", { baseUrl: hanging.url }));
    expect(error.details.reason).toBe("CARD_UNREACHABLE");
    expect(error.message).toContain("timed out");
  });
});

describe("AgentCardCache with broken cards", () => {
  let server: RawServer;
  let answer: { status: number; type: string; body: string | Buffer; location?: string };
  beforeAll(async () => {
    server = await startRawServer((_req, res) => {
      res.writeHead(answer.status, { "content-type": answer.type, ...(answer.location ? { location: answer.location } : {}) });
      res.end(answer.body);
    });
  });
  afterAll(() => server.close());

  it("fetches {base}/.well-known/agent-card.json below a base path, announcing A2A-Version 1.0", async () => {
    answer = { status: 200, type: "application/json", body: JSON.stringify({ url: "https://x.example.com/rpc", capabilities: { pushNotifications: true } }) };
    const { cards } = cache();
    await cards.get("org-a", "x", { baseUrl: `${server.url}/agents/x/` });
    const request = server.requests.at(-1)!;
    expect(request.path).toBe("/agents/x/.well-known/agent-card.json");
    expect(request.headers["a2a-version"]).toBe("1.0");
  });

  it("falls back to the older /.well-known/agent.json when agent-card.json answers 404 (and only then)", async () => {
    const legacy = await startRawServer((req, res) => {
      const found = req.url === "/.well-known/agent.json";
      res.writeHead(found ? 200 : 404, { "content-type": "application/json" });
      res.end(found ? JSON.stringify({ url: "https://x.example.com/rpc", capabilities: { pushNotifications: true } }) : "{}");
    });
    cleanups.push(() => legacy.close());
    const { cards } = cache();
    const card = await cards.get("org-a", "old", { baseUrl: legacy.url });
    expect(card.cardUrl).toBe(`${legacy.url}/.well-known/agent.json`);
    expect(card.protocol).toBe("0.3");
    expect(legacy.requests.map((r) => r.path)).toEqual(["/.well-known/agent-card.json", "/.well-known/agent.json"]);

    // A card at neither path is CARD_UNREACHABLE; any other failure at the current path is not retried elsewhere.
    answer = { status: 503, type: "application/json", body: "{}" };
    const before = server.requests.length;
    const error = await failure(cards.get("org-a", "down", { baseUrl: server.url }));
    expect(error.details).toMatchObject({ reason: "CARD_UNREACHABLE", status: 503 });
    expect(server.requests.slice(before).map((r) => r.path)).toEqual(["/.well-known/agent-card.json"]);
    answer = { status: 404, type: "application/json", body: "{}" };
    const missing = await failure(cards.get("org-a", "gone", { baseUrl: server.url }));
    expect(missing.details).toMatchObject({ reason: "CARD_UNREACHABLE", status: 404 });
  });

  it.each([
    ["a body over the size cap", { status: 200, type: "application/json", body: JSON.stringify({ name: "x".repeat(5_000) }) }],
    ["a body that is not JSON", { status: 200, type: "application/json", body: "<html>hello</html>" }],
    ["a body that is not UTF-8", { status: 200, type: "application/json", body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]) }],
    ["a card with malformed skills", { status: 200, type: "application/json", body: JSON.stringify({ skills: [{ id: 7 }] }) }],
    ["nesting deeper than the bound", { status: 200, type: "application/json", body: `${"[".repeat(200)}${"]".repeat(200)}` }],
  ])("fails closed with CARD_INVALID on %s", async (_what, broken) => {
    answer = broken;
    const { cards } = cache({ maxCardBytes: 4_096 });
    const error = await failure(cards.get("org-a", "x", { baseUrl: server.url }));
    expect(error.code).toBe(ErrorCode.FailedPrecondition);
    expect(error.details.reason).toBe("CARD_INVALID");
  });

  it("fails closed with CARD_NO_PROTOCOL for a card that only offers other bindings", async () => {
    answer = {
      status: 200,
      type: "application/json",
      body: JSON.stringify({ supportedInterfaces: [{ url: "https://x.example.com/grpc", protocolBinding: "GRPC", protocolVersion: "1.0" }], capabilities: { pushNotifications: true } }),
    };
    const { cards } = cache();
    const error = await failure(cards.get("org-a", "x", { baseUrl: server.url }));
    expect(error.details.reason).toBe("CARD_NO_PROTOCOL");
  });

  it("does not follow a redirect for the card", async () => {
    answer = { status: 302, type: "text/plain", body: "", location: `${server.url}/elsewhere` };
    const { cards } = cache();
    const error = await failure(cards.get("org-a", "x", { baseUrl: server.url }));
    expect(error.details).toMatchObject({ reason: "CARD_UNREACHABLE", status: 302 });
  });
});

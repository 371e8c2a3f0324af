/**
 * Foreign failures against real local servers (issue 4, test 9): transient failures are retried with backoff and
 * others are not (503 yes, 400 no, through the A2A SDK's card resolver with the guarded fetch injected); the
 * per-(tenant, agent) breaker opens after repeated failures and then fails fast without contacting the server,
 * half-opens after resetTimeout and closes after a success once the server recovers.
 */
import { DefaultAgentCardResolver } from "@a2a-js/sdk/client";
import type { ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { ErrorCode, SwitchyardError } from "../../../src/errors.js";
import { BreakerRegistry, type BreakerState } from "../../../src/foreign/egress/breakers.js";
import { isTransientFailure } from "../../../src/foreign/egress/egress-errors.js";
import { createGuardedFetch } from "../../../src/foreign/egress/guarded-fetch.js";
import { backoffDelay, withRetries } from "../../../src/foreign/egress/retries.js";
import { startServer, type TestServer } from "./servers.js";

const TENANT = "acme";
const OTHER_TENANT = "globex";
const AGENT = "summarizer";
const CARD = { name: "Summarizer", description: "test agent", version: "1.0.0", supportedInterfaces: [], capabilities: { pushNotifications: true }, skills: [] };

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

/** A server answering with `status()` each time (the card on 200). */
async function agentServer(status: () => number): Promise<TestServer> {
  const s = await startServer((_req, res: ServerResponse) => {
    const code = status();
    if (code === 200) res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(CARD));
    else res.writeHead(code, { "content-type": "text/plain" }).end(`status ${code}`);
  });
  cleanups.push(() => s.close());
  return s;
}

function guardedFetch() {
  return createGuardedFetch({ allowHosts: ["127.0.0.1"], allowedNetworks: ["127.0.0.0/8"], connectTimeoutMs: 500, totalTimeoutMs: 1000, maxResponseBytes: 65536 });
}

function registry(events: BreakerState[] = [], resetTimeout = 200) {
  const breakers = new BreakerRegistry({
    volumeThreshold: 3,
    errorThresholdPercentage: 50,
    resetTimeout,
    onStateChange: (tenant, agent, state) => {
      if (tenant === TENANT && agent === AGENT) events.push(state);
    },
  });
  cleanups.push(() => breakers.shutdown());
  return breakers;
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected the call to fail");
}

async function waitFor(predicate: () => boolean, timeoutMs = 3000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > until) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("retries", () => {
  const fast = { baseDelayMs: 5, maxDelayMs: 20 };

  it("retries 503 answers until the agent recovers (through the SDK's card resolver)", async () => {
    const statuses = [503, 503, 200];
    const s = await agentServer(() => statuses.shift() ?? 200);
    const resolver = new DefaultAgentCardResolver({ fetchImpl: guardedFetch() });
    const retried: number[] = [];
    const card = await withRetries(() => resolver.resolve(s.origin), { attempts: 4, ...fast, onRetry: ({ attempt }) => retried.push(attempt) });
    expect(card.name).toBe("Summarizer");
    expect(s.requests).toHaveLength(3);
    expect(s.requests.every((r) => r.url === "/.well-known/agent-card.json")).toBe(true);
    expect(retried).toEqual([1, 2]);
  });

  it("does not retry a 400", async () => {
    const s = await agentServer(() => 400);
    const resolver = new DefaultAgentCardResolver({ fetchImpl: guardedFetch() });
    const error = await failure(withRetries(() => resolver.resolve(s.origin), { attempts: 4, ...fast }));
    expect(error.message).toMatch(/400/);
    expect(isTransientFailure(error)).toBe(false);
    expect(s.requests).toHaveLength(1);
  });

  it("gives up after the last attempt with the last transient error", async () => {
    const s = await agentServer(() => 503);
    const fetchIt = guardedFetch();
    const error = await failure(withRetries(() => fetchIt(`${s.origin}/`), { attempts: 3, ...fast }));
    expect(error).toBeInstanceOf(SwitchyardError);
    expect((error as SwitchyardError).details).toMatchObject({ reason: "EGRESS_TRANSIENT_STATUS", status: 503, transient: true });
    expect(s.requests).toHaveLength(3);
  });

  it("retries refused connections but never policy refusals", async () => {
    const gone = await startServer(() => undefined);
    await gone.close();
    let attempts = 0;
    const fetchIt = guardedFetch();
    const refused = await failure(withRetries(() => (attempts++, fetchIt(`${gone.origin}/`)), { attempts: 3, ...fast }));
    expect((refused as SwitchyardError).details).toMatchObject({ errorCode: "ECONNREFUSED", transient: true });
    expect(attempts).toBe(3);

    attempts = 0;
    const denied = await failure(withRetries(() => (attempts++, fetchIt("http://10.0.0.1/")), { attempts: 3, ...fast }));
    expect((denied as SwitchyardError).code).toBe(ErrorCode.PolicyDenied);
    expect(attempts).toBe(1);
  });

  it("stops waiting when the caller aborts", async () => {
    const controller = new AbortController();
    const transient = new SwitchyardError(ErrorCode.Unavailable, "busy", { details: { transient: true } });
    setTimeout(() => controller.abort(), 30);
    const started = Date.now();
    const error = await failure(withRetries(() => Promise.reject(transient), { attempts: 5, baseDelayMs: 5000, maxDelayMs: 5000, signal: controller.signal }));
    expect((error as SwitchyardError).code).toBe(ErrorCode.Cancelled);
    expect(error.cause).toBe(transient);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("backs off exponentially with jitter, within the cap, honouring Retry-After", () => {
    const options = { baseDelayMs: 100, maxDelayMs: 1000 };
    expect(backoffDelay(1, options, () => 0)).toBe(50);
    expect(backoffDelay(1, options, () => 0.999)).toBe(100);
    expect(backoffDelay(3, options, () => 0)).toBe(200);
    expect(backoffDelay(10, options, () => 0.999)).toBe(1000);
    const busy = new SwitchyardError(ErrorCode.Unavailable, "429", { details: { transient: true, retryAfterMs: 700 } });
    expect(backoffDelay(1, options, () => 0, busy)).toBe(700);
    const tooLong = new SwitchyardError(ErrorCode.Unavailable, "429", { details: { transient: true, retryAfterMs: 60_000 } });
    expect(backoffDelay(1, options, () => 0, tooLong)).toBe(1000);
  });
});

describe("circuit breaker per (tenant, agent)", () => {
  it("opens after repeated failures, fails fast without contacting the agent, half-opens and closes on recovery", async () => {
    let status = 503;
    const s = await agentServer(() => status);
    const fetchIt = guardedFetch();
    const events: BreakerState[] = [];
    const breakers = registry(events);
    const call = (tenant = TENANT, agent = AGENT) => breakers.run(tenant, agent, () => fetchIt(`${s.origin}/.well-known/agent-card.json`));

    for (let i = 0; i < 3; i++) expect(((await failure(call())) as SwitchyardError).details.reason).toBe("EGRESS_TRANSIENT_STATUS");
    expect(s.requests).toHaveLength(3);
    expect(breakers.state(TENANT, AGENT)).toBe("open");

    for (let i = 0; i < 5; i++) {
      const fast = (await failure(call())) as SwitchyardError;
      expect(fast.code).toBe(ErrorCode.Unavailable);
      expect(fast.details).toMatchObject({ reason: "BREAKER_OPEN", tenant: TENANT, agent: AGENT, transient: false });
      expect(fast.message).toContain(AGENT);
    }
    expect(s.requests).toHaveLength(3);

    // Another tenant's breaker for the same agent, and another agent of this tenant, are untouched.
    expect(breakers.state(OTHER_TENANT, AGENT)).toBe("closed");
    await failure(call(OTHER_TENANT, AGENT));
    await failure(call(TENANT, "translator"));
    expect(s.requests).toHaveLength(5);

    await waitFor(() => breakers.state(TENANT, AGENT) === "half_open");
    status = 200;
    const res = await call();
    expect(res.status).toBe(200);
    expect(breakers.state(TENANT, AGENT)).toBe("closed");
    expect(events).toEqual(["open", "half_open", "closed"]);
    expect(s.requests).toHaveLength(6);
    expect(breakers.states()).toEqual(
      expect.arrayContaining([
        { tenant: TENANT, agent: AGENT, state: "closed" },
        { tenant: OTHER_TENANT, agent: AGENT, state: "closed" },
      ]),
    );
  });

  it("re-opens when the half-open trial fails, letting only that one call through", async () => {
    const s = await agentServer(() => 502);
    const fetchIt = guardedFetch();
    const events: BreakerState[] = [];
    const breakers = registry(events, 150);
    const call = () => breakers.run(TENANT, AGENT, () => fetchIt(`${s.origin}/`));
    for (let i = 0; i < 3; i++) await failure(call());
    await waitFor(() => breakers.state(TENANT, AGENT) === "half_open");
    const [trial, concurrent] = await Promise.all([failure(call()), failure(call())]);
    expect((trial as SwitchyardError).details.reason).toBe("EGRESS_TRANSIENT_STATUS");
    expect((concurrent as SwitchyardError).details.reason).toBe("BREAKER_OPEN");
    expect(breakers.state(TENANT, AGENT)).toBe("open");
    expect(s.requests).toHaveLength(4);
    expect(events).toEqual(["open", "half_open", "open"]);
  });

  it("ends retries at once when the breaker opens", async () => {
    const s = await agentServer(() => 503);
    const fetchIt = guardedFetch();
    const breakers = registry();
    const error = (await failure(
      withRetries(() => breakers.run(TENANT, AGENT, () => fetchIt(`${s.origin}/`)), { attempts: 10, baseDelayMs: 1, maxDelayMs: 5 }),
    )) as SwitchyardError;
    expect(error.details.reason).toBe("BREAKER_OPEN");
    expect(s.requests).toHaveLength(3);
  });

  it("does not count our own refusals against the agent", async () => {
    const breakers = registry();
    const fetchIt = guardedFetch();
    for (let i = 0; i < 6; i++) {
      expect(((await failure(breakers.run(TENANT, AGENT, () => fetchIt("http://169.254.169.254/")))) as SwitchyardError).code).toBe(ErrorCode.PolicyDenied);
    }
    expect(breakers.state(TENANT, AGENT)).toBe("closed");
  });
});

/**
 * The egress guard against real servers on loopback (issue 4, test 7): refused destinations never see a socket,
 * loopback is reachable only through the operator's CIDRs, DNS is resolved once and the connection pinned to the
 * checked address (Host and TLS servername keep the name), redirects are refused unfollowed, and timeouts and the
 * size cap hold. No traffic is ever sent to 10.x or 169.254.x: those refusals happen before any connection.
 */
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { ErrorCode, SwitchyardError } from "../../../src/errors.js";
import { createGuardedFetch, type GuardedFetchOptions } from "../../../src/foreign/egress/guarded-fetch.js";
import { countClientSockets, startServer, startSilentServer, type TestServer } from "./servers.js";
import { TEST_CERT } from "./tls-fixture.js";

const LOOPBACK = ["127.0.0.0/8"];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

async function server(...args: Parameters<typeof startServer>): Promise<TestServer> {
  const s = await startServer(...args);
  cleanups.push(() => s.close());
  return s;
}

function guard(options: Partial<GuardedFetchOptions> & Pick<GuardedFetchOptions, "allowHosts">) {
  return createGuardedFetch({ connectTimeoutMs: 1000, totalTimeoutMs: 2000, maxResponseBytes: 64 * 1024, ...options });
}

/** A resolver that must not be asked. */
function forbiddenResolver() {
  const calls: string[] = [];
  return {
    calls,
    resolver: async (host: string): Promise<string[]> => {
      calls.push(host);
      throw new Error(`resolver asked for ${host}`);
    },
  };
}

async function failure(promise: Promise<unknown>): Promise<SwitchyardError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SwitchyardError);
    return error as SwitchyardError;
  }
  throw new Error("expected the call to fail");
}

const ok = (_req: unknown, res: import("node:http").ServerResponse) => res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');

describe("address checks", () => {
  it("refuses 127.0.0.2 without the operator allowlist, and reaches it with 127.0.0.0/8", async () => {
    const s = await server(ok, { host: "127.0.0.2" });
    const denied = await countClientSockets(() => guard({ allowHosts: ["127.0.0.2"] })(`${s.origin}/card`));
    expect(denied.result.status).toBe("rejected");
    const error = (denied.result as PromiseRejectedResult).reason as SwitchyardError;
    expect(error.code).toBe(ErrorCode.PolicyDenied);
    expect(error.details).toMatchObject({ reason: "EGRESS_ADDRESS_BLOCKED", range: "loopback", address: "127.0.0.2", transient: false });
    expect(error.message).toMatch(/127\.0\.0\.2.*loopback/);
    expect(denied.sockets).toBe(0);
    expect(s.requests).toHaveLength(0);

    const admitted = await countClientSockets(() => guard({ allowHosts: ["127.0.0.2"], allowedNetworks: LOOPBACK })(`${s.origin}/card`));
    expect(admitted.sockets).toBe(1);
    expect(admitted.result.status).toBe("fulfilled");
    const res = (admitted.result as PromiseFulfilledResult<Response>).value;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
    expect(s.requests).toHaveLength(1);
    expect(s.requests[0]!.localAddress).toBe("127.0.0.2");
  });

  it.each([
    ["http://169.254.169.254/latest/meta-data/", "metadata"],
    ["http://10.0.0.1:8080/", "private"],
    ["http://[::ffff:169.254.169.254]/", "metadata"],
    ["http://[::ffff:a00:1]/", "private"],
    ["http://[fd00:ec2::254]/", "metadata"],
    ["http://[64:ff9b::a9fe:a9fe]/", "metadata"],
    ["http://[fe80::1]/", "link-local"],
    ["http://100.64.0.1/", "cgnat"],
    ["http://192.168.0.1/", "private"],
    ["http://0.0.0.0/", "unspecified"],
    ["http://224.0.0.1/", "multicast"],
    ["http://255.255.255.255/", "broadcast"],
    ["http://[::1]/", "loopback"],
  ])("refuses %s (%s) before any socket, without asking the resolver", async (url, range) => {
    const host = new URL(url).hostname;
    const dns = forbiddenResolver();
    const fetchIt = guard({ allowHosts: [host], allowedNetworks: ["127.0.0.0/8"], resolver: dns.resolver });
    const { sockets, result } = await countClientSockets(() => fetchIt(url));
    expect(result.status).toBe("rejected");
    const error = (result as PromiseRejectedResult).reason as SwitchyardError;
    expect(error.code).toBe(ErrorCode.PolicyDenied);
    expect(error.details).toMatchObject({ reason: "EGRESS_ADDRESS_BLOCKED", range, transient: false });
    expect(sockets).toBe(0);
    expect(dns.calls).toEqual([]);
  });

  it("never admits unspecified or multicast addresses, even when the operator admits everything", async () => {
    const fetchIt = guard({ allowHosts: ["0.0.0.0", "224.0.0.1"], allowedNetworks: ["0.0.0.0/0"] });
    const { sockets, result } = await countClientSockets(async () => {
      expect((await failure(fetchIt("http://0.0.0.0/"))).details.range).toBe("unspecified");
      expect((await failure(fetchIt("http://224.0.0.1/"))).details.range).toBe("multicast");
    });
    expect(result.status).toBe("fulfilled");
    expect(sockets).toBe(0);
  });

  it("refuses a host name that resolves to a private or (unadmitted) loopback address", async () => {
    const asked: string[] = [];
    const resolver = async (host: string) => {
      asked.push(host);
      return host === "evil.test" ? ["10.1.2.3"] : host === "rebind.test" ? ["127.0.0.1"] : ["127.0.0.1", "10.1.2.3"];
    };
    const { sockets, result } = await countClientSockets(async () => {
      const evil = await failure(guard({ allowHosts: ["evil.test"], resolver })("http://evil.test/"));
      expect(evil.details).toMatchObject({ reason: "EGRESS_ADDRESS_BLOCKED", address: "10.1.2.3", range: "private" });
      expect(evil.message).toContain("evil.test");
      const rebind = await failure(guard({ allowHosts: ["rebind.test"], resolver })("http://rebind.test/"));
      expect(rebind.details).toMatchObject({ reason: "EGRESS_ADDRESS_BLOCKED", address: "127.0.0.1", range: "loopback" });
      // One admitted and one refused answer: the whole answer is refused, not just the bad half.
      const mixed = await failure(guard({ allowHosts: ["mixed.test"], allowedNetworks: LOOPBACK, resolver })("http://mixed.test/"));
      expect(mixed.details).toMatchObject({ reason: "EGRESS_ADDRESS_BLOCKED", address: "10.1.2.3" });
    });
    expect(result.status).toBe("fulfilled");
    expect(sockets).toBe(0);
    expect(asked).toEqual(["evil.test", "rebind.test", "mixed.test"]);
  });
});

describe("DNS pinning", () => {
  it("resolves once per call and connects to exactly the checked address, keeping the name as Host", async () => {
    const checked = await server(ok, { host: "127.0.0.4" });
    const later = await server(ok, { host: "127.0.0.5", port: checked.port });
    let calls = 0;
    const resolver = async () => (++calls === 1 ? ["127.0.0.4"] : ["127.0.0.5"]);
    const fetchIt = guard({ allowHosts: ["pinned.test"], allowedNetworks: LOOPBACK, resolver });

    const res = await fetchIt(`http://pinned.test:${checked.port}/a?b=1`, { method: "POST", headers: { "content-type": "application/json", host: "spoofed.test" }, body: '{"x":1}' });
    expect(res.status).toBe(200);
    expect(res.url).toBe(`http://pinned.test:${checked.port}/a?b=1`);
    expect(calls).toBe(1);
    expect(checked.requests).toHaveLength(1);
    expect(checked.requests[0]).toMatchObject({ method: "POST", url: "/a?b=1", host: `pinned.test:${checked.port}`, localAddress: "127.0.0.4", body: '{"x":1}' });
    expect(checked.requests[0]!.headers["content-type"]).toBe("application/json");
    expect(later.requests).toHaveLength(0);

    // The next call resolves afresh (once) and is checked again.
    await fetchIt(`http://pinned.test:${checked.port}/`);
    expect(calls).toBe(2);
    expect(later.requests).toHaveLength(1);
    expect(later.requests[0]!.localAddress).toBe("127.0.0.5");
  });

  it("pins IPv6 answers too, admitted by an IPv6 operator CIDR", async (ctx) => {
    let s: TestServer;
    try {
      s = await server(ok, { host: "::1" });
    } catch {
      return ctx.skip(); // no IPv6 loopback on this machine
    }
    const resolver = async () => ["::1"];
    expect((await failure(guard({ allowHosts: ["v6.test"], allowedNetworks: LOOPBACK, resolver })(`http://v6.test:${s.port}/`))).details.range).toBe("loopback");
    const res = await guard({ allowHosts: ["v6.test", "[::1]"], allowedNetworks: ["::1/128"], resolver })(`http://v6.test:${s.port}/`);
    expect(res.status).toBe(200);
    expect((await guard({ allowHosts: ["[::1]"], allowedNetworks: ["::1/128"] })(`${s.origin}/`)).status).toBe(200);
    expect(s.requests.map((r) => [r.host, r.localAddress])).toEqual([
      [`v6.test:${s.port}`, "::1"],
      [`[::1]:${s.port}`, "::1"],
    ]);
  });

  it("over https, connects to the pinned address while SNI and the certificate check use the name", async () => {
    const s = await server(ok, { host: "127.0.0.6", tls: true });
    const resolver = async () => ["127.0.0.6"];
    const url = `https://agent.test:${s.port}/.well-known/agent-card.json`;
    const res = await guard({ allowHosts: ["agent.test"], allowedNetworks: LOOPBACK, resolver, ca: TEST_CERT })(url);
    expect(res.status).toBe(200);
    expect(s.requests[0]).toMatchObject({ host: `agent.test:${s.port}`, localAddress: "127.0.0.6" });

    // Certificates are verified: without the test CA the same call fails, and not as a transient failure.
    const untrusted = await failure(guard({ allowHosts: ["agent.test"], allowedNetworks: LOOPBACK, resolver })(url));
    expect(untrusted.code).toBe(ErrorCode.Unavailable);
    expect(untrusted.details).toMatchObject({ reason: "EGRESS_CONNECTION_FAILED", transient: false });
    // A name the certificate does not cover fails the hostname check although the address is the same.
    const wrongName = await failure(guard({ allowHosts: ["other.test"], allowedNetworks: LOOPBACK, resolver, ca: TEST_CERT })(`https://other.test:${s.port}/`));
    expect(wrongName.details).toMatchObject({ reason: "EGRESS_CONNECTION_FAILED", transient: false });
    expect(s.requests).toHaveLength(1);
  });
});

describe("URL rules", () => {
  it("refuses hosts that are not on the agent's allowlist, before any socket", async () => {
    const s = await server(ok);
    const { sockets, result } = await countClientSockets(async () => {
      const error = await failure(guard({ allowHosts: ["agent.example"], allowedNetworks: LOOPBACK })(`${s.origin}/`));
      expect(error.code).toBe(ErrorCode.PolicyDenied);
      expect(error.details).toMatchObject({ reason: "EGRESS_HOST_NOT_ALLOWED", host: `127.0.0.1:${s.port}`, transient: false });
      expect(error.message).toMatch(/not on the agent's allowlist/);
      const wrongPort = await failure(guard({ allowHosts: [`127.0.0.1:${s.port + 1}`], allowedNetworks: LOOPBACK })(`${s.origin}/`));
      expect(wrongPort.details.reason).toBe("EGRESS_HOST_NOT_ALLOWED");
    });
    expect(result.status).toBe("fulfilled");
    expect(sockets).toBe(0);
    expect(s.requests).toHaveLength(0);
  });

  it("admits wildcard subdomains only", async () => {
    const s = await server(ok);
    const fetchIt = guard({ allowHosts: ["*.example.test"], allowedNetworks: LOOPBACK, resolver: async () => ["127.0.0.1"] });
    expect((await fetchIt(`http://a.example.test:${s.port}/`)).status).toBe(200);
    expect((await failure(fetchIt(`http://example.test:${s.port}/`))).details.reason).toBe("EGRESS_HOST_NOT_ALLOWED");
    expect((await failure(fetchIt(`http://evilexample.test:${s.port}/`))).details.reason).toBe("EGRESS_HOST_NOT_ALLOWED");
    expect(s.requests).toHaveLength(1);
  });

  it.each(["file:///etc/passwd", "ftp://127.0.0.1/", "data:text/plain,hi", "ws://127.0.0.1/", "gopher://127.0.0.1/"])("refuses the %s scheme", async (url) => {
    const error = await failure(guard({ allowHosts: ["127.0.0.1"], allowedNetworks: LOOPBACK })(url));
    expect(error.code).toBe(ErrorCode.PolicyDenied);
    expect(error.details).toMatchObject({ reason: "EGRESS_SCHEME_NOT_ALLOWED", transient: false });
  });

  it("refuses URLs carrying credentials and unparseable URLs", async () => {
    const fetchIt = guard({ allowHosts: ["127.0.0.1"], allowedNetworks: LOOPBACK });
    expect((await failure(fetchIt("http://user:secret@127.0.0.1/"))).details.reason).toBe("EGRESS_URL_CREDENTIALS");
    expect((await failure(fetchIt("not a url"))).code).toBe(ErrorCode.InvalidArgument);
  });
});

describe("redirects", () => {
  it.each([301, 302, 303, 307, 308])("refuses a %s and does not follow it", async (status) => {
    const target = await server(ok);
    const redirector = await server((_req, res) => res.writeHead(status, { location: `${target.origin}/elsewhere` }).end());
    const fetchIt = guard({ allowHosts: ["127.0.0.1"], allowedNetworks: LOOPBACK });
    const error = await failure(fetchIt(`${redirector.origin}/`, { redirect: "follow" }));
    expect(error.code).toBe(ErrorCode.PolicyDenied);
    expect(error.details).toMatchObject({ reason: "EGRESS_REDIRECT", status, location: `${target.origin}/elsewhere`, transient: false });
    expect(error.message).toMatch(/redirect/);
    expect(redirector.requests).toHaveLength(1);
    expect(target.requests).toHaveLength(0);
  });
});

describe("timeouts and failures", () => {
  it("hits the connect timeout when name resolution never answers", async () => {
    const started = Date.now();
    const error = await failure(guard({ allowHosts: ["slow.test"], connectTimeoutMs: 100, resolver: () => new Promise<string[]>(() => undefined) })("http://slow.test/"));
    expect(error.code).toBe(ErrorCode.Timeout);
    expect(error.details).toMatchObject({ reason: "EGRESS_CONNECT_TIMEOUT", transient: true });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("hits the connect timeout when the TLS handshake never completes", async () => {
    const silent = await startSilentServer();
    cleanups.push(() => silent.close());
    const started = Date.now();
    const error = await failure(guard({ allowHosts: ["127.0.0.1"], allowedNetworks: LOOPBACK, connectTimeoutMs: 150 })(`https://127.0.0.1:${silent.port}/`));
    expect(error.details).toMatchObject({ reason: "EGRESS_CONNECT_TIMEOUT", transient: true });
    expect(Date.now() - started).toBeLessThan(1500);
    expect(silent.connections()).toBe(1);
  });

  it("hits the total timeout against a server that never answers, and one that trickles its body", async () => {
    const never = await server(() => undefined);
    const trickle = await server((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      const timer = setInterval(() => res.write("."), 20);
      res.on("close", () => clearInterval(timer));
    });
    const fetchIt = guard({ allowHosts: ["127.0.0.1"], allowedNetworks: LOOPBACK, totalTimeoutMs: 200 });
    for (const origin of [never.origin, trickle.origin]) {
      const started = Date.now();
      const error = await failure(fetchIt(`${origin}/`));
      expect(error.code).toBe(ErrorCode.Timeout);
      expect(error.details).toMatchObject({ reason: "EGRESS_TOTAL_TIMEOUT", transient: true });
      expect(Date.now() - started).toBeLessThan(1500);
    }
    expect(never.requests).toHaveLength(1);
  });

  it("stops when the caller aborts", async () => {
    const never = await server(() => undefined);
    const controller = new AbortController();
    const pending = guard({ allowHosts: ["127.0.0.1"], allowedNetworks: LOOPBACK })(`${never.origin}/`, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    const error = await failure(pending);
    expect(error.code).toBe(ErrorCode.Cancelled);
    expect(error.details).toMatchObject({ reason: "EGRESS_CANCELLED", transient: false });

    // The guard's own lifetime signal (e.g. shutdown) ends its calls the same way.
    const lifetime = new AbortController();
    const owned = guard({ allowHosts: ["127.0.0.1"], allowedNetworks: LOOPBACK, signal: lifetime.signal })(`${never.origin}/`);
    setTimeout(() => lifetime.abort(), 50);
    expect((await failure(owned)).details.reason).toBe("EGRESS_CANCELLED");
  });

  it("reports a refused connection as transient Unavailable", async () => {
    const gone = await startServer(ok);
    await gone.close();
    const error = await failure(guard({ allowHosts: ["127.0.0.1"], allowedNetworks: LOOPBACK })(`${gone.origin}/`));
    expect(error.code).toBe(ErrorCode.Unavailable);
    expect(error.details).toMatchObject({ reason: "EGRESS_CONNECTION_FAILED", errorCode: "ECONNREFUSED", transient: true });
  });
});

describe("responses", () => {
  it("refuses bodies over the cap, declared or streamed, compressed or not", async () => {
    const big = "x".repeat(4096);
    const declared = await server((_req, res) => res.writeHead(200, { "content-length": String(big.length) }).end(big));
    const streamed = await server((_req, res) => {
      res.writeHead(200);
      for (let i = 0; i < 8; i++) res.write(big.slice(0, 512));
      res.end();
    });
    const bomb = await server((_req, res) => res.writeHead(200, { "content-encoding": "gzip" }).end(gzipSync(Buffer.alloc(1_000_000))));
    const fetchIt = guard({ allowHosts: ["127.0.0.1"], allowedNetworks: LOOPBACK, maxResponseBytes: 1024 });
    for (const s of [declared, streamed, bomb]) {
      const error = await failure(fetchIt(`${s.origin}/`));
      expect(error.code).toBe(ErrorCode.PayloadTooLarge);
      expect(error.details).toMatchObject({ reason: "EGRESS_RESPONSE_TOO_LARGE", maxResponseBytes: 1024, transient: false });
    }
    // At the cap exactly is fine, and a compressed body comes back decoded.
    const exact = await server((_req, res) => res.writeHead(200, { "content-encoding": "gzip" }).end(gzipSync("y".repeat(1024))));
    const res = await fetchIt(`${exact.origin}/`);
    expect(await res.text()).toBe("y".repeat(1024));
    expect(res.headers.get("content-encoding")).toBeNull();
  });

  it("turns 429/502/503/504 into transient errors and returns other statuses as responses", async () => {
    let status = 503;
    const s = await server((_req, res) => res.writeHead(status, { "retry-after": "2", "content-type": "application/json" }).end('{"error":"x"}'));
    const fetchIt = guard({ allowHosts: ["127.0.0.1"], allowedNetworks: LOOPBACK });
    for (const transient of [429, 502, 503, 504]) {
      status = transient;
      const error = await failure(fetchIt(`${s.origin}/`));
      expect(error.code).toBe(ErrorCode.Unavailable);
      expect(error.details).toMatchObject({ reason: "EGRESS_TRANSIENT_STATUS", status: transient, transient: true, retryAfterMs: 2000 });
    }
    for (const plain of [400, 404, 500]) {
      status = plain;
      const res = await fetchIt(`${s.origin}/`);
      expect(res.status).toBe(plain);
      expect(await res.json()).toEqual({ error: "x" });
    }
    status = 503;
    const raw = await guard({ allowHosts: ["127.0.0.1"], allowedNetworks: LOOPBACK, transientStatusAsError: false })(`${s.origin}/`);
    expect(raw.status).toBe(503);
    status = 204;
    expect((await fetchIt(`${s.origin}/`, { method: "DELETE" })).status).toBe(204);
  });

  it("refuses to be built with unusable settings", () => {
    expect(() => guard({ allowHosts: ["a.test"], allowedNetworks: ["10.0.0.0/40"] })).toThrowError(expect.objectContaining({ code: ErrorCode.Config }));
    expect(() => guard({ allowHosts: ["*"] })).toThrowError(expect.objectContaining({ code: ErrorCode.InvalidArgument }));
    expect(() => guard({ allowHosts: ["a.test"], totalTimeoutMs: 0 })).toThrowError(expect.objectContaining({ code: ErrorCode.InvalidArgument }));
  });
});

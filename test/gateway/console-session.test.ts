/**
 * Console sign-in against a real gateway: an API key becomes an HttpOnly, SameSite=Strict session cookie whose
 * calls to the Connect API need the session's CSRF token (and the gateway's own Origin); sign-out, idle and
 * absolute expiry, and revoking the key end a session; failed sign-ins are rate-limited per client address
 * (`X-Forwarded-For` read only through trusted proxies), and a good key signs in whatever its address has failed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../src/gen/switchyard/api/v1/admin_pb.js";
import { listApiKeys, revokeApiKey } from "../../src/tenancy/api-keys.js";
import { createGatewayFixture, type GatewayFixture } from "./fixture.js";
import { sessionCall, signIn, signInFrom } from "./console-fixture.js";

const MINUTE = 60_000;
/** Well-formed (so it is looked up) and unknown. */
const BOGUS = "sy_" + "b".repeat(43);
const LIST_WORKFLOWS = "switchyard.api.v1.WorkflowService/List";

describe("console sessions", () => {
  let fx: GatewayFixture;
  let key: string;
  let clock = Date.now();
  beforeAll(async () => {
    fx = await createGatewayFixture({
      console: { now: () => clock, sessionIdleMs: 30 * MINUTE, sessionMaxMs: 12 * 60 * MINUTE, signInMaxFailures: 3, signInWindowMs: MINUTE },
    });
    key = await fx.tenant("console-a");
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  it("signs in with a good key: JSON with tenant and CSRF token, and a strict HttpOnly cookie", async () => {
    const s = await signIn(fx.url, key);
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({ tenant: "console-a", admin: false });
    expect(s.body.csrfToken).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(Date.parse(s.body.expiresAt)).toBe(clock + 30 * MINUTE);
    expect(s.setCookie).toMatch(/^switchyard_session=[A-Za-z0-9_-]{43}; /);
    for (const flag of ["HttpOnly", "SameSite=Strict", "Path=/", `Max-Age=${12 * 3600}`]) expect(s.setCookie).toContain(flag);
    // Plain http here: the cookie would never come back if it demanded https.
    expect(s.setCookie).not.toContain("Secure");
    // A proxy that terminated TLS says so; then the cookie is https-only.
    expect((await signIn(fx.url, key, { "x-forwarded-proto": "https" })).setCookie).toContain("; Secure");
  });

  it("stores neither the token nor the key", async () => {
    const s = await signIn(fx.url, key);
    const token = s.cookie.split("=")[1]!;
    const { rows } = await fx.rt.pool.query("SELECT * FROM console_sessions");
    const dump = JSON.stringify(rows);
    expect(rows.length).toBeGreaterThan(0);
    expect(dump).not.toContain(token);
    expect(dump).not.toContain(key);
    expect(dump).not.toContain(s.csrfToken);
  });

  it("refuses a bad key with 401 JSON and no cookie; a malformed body is 400", async () => {
    const bad = await signIn(fx.url, "sy_" + "x".repeat(43), { "x-forwarded-for": "1.2.3.4" });
    expect(bad.status).toBe(401);
    expect(bad.body).toEqual({ code: "UNAUTHENTICATED", message: "unknown API key" });
    expect(bad.setCookie).toBe("");
    const res = await fetch(`${fx.url}/console/session`, { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "INVALID_ARGUMENT" });
    const missing = await signIn(fx.url, 42);
    expect(missing.status).toBe(400);
    expect(missing.body.message).toContain("apiKey");
  });

  it("refuses a sign-in posted from another site's page", async () => {
    const foreign = await signIn(fx.url, key, { origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    expect(foreign.body).toMatchObject({ code: "PERMISSION_DENIED" });
    expect(foreign.setCookie).toBe("");
    expect((await signIn(fx.url, key, { origin: fx.url })).status).toBe(200);
  });

  it("GET /console/session answers for a live session and 401 without one", async () => {
    const s = await signIn(fx.url, key);
    const res = await fetch(`${fx.url}/console/session`, { headers: { cookie: s.cookie } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ tenant: "console-a", admin: false, csrfToken: s.csrfToken });
    const none = await fetch(`${fx.url}/console/session`);
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ code: "UNAUTHENTICATED" });
  });

  it("calls the API with the cookie and the CSRF token; refuses a missing, wrong or cross-origin token", async () => {
    const s = await signIn(fx.url, key);
    const ok = await sessionCall(fx.url, LIST_WORKFLOWS, {}, s);
    expect(ok.status).toBe(200);
    const own = await sessionCall(fx.url, LIST_WORKFLOWS, {}, s, { origin: fx.url });
    expect(own.status).toBe(200);

    const missing = await sessionCall(fx.url, LIST_WORKFLOWS, {}, { cookie: s.cookie, csrfToken: null });
    expect(missing.status).toBe(403);
    expect(missing.body).toMatchObject({ code: "permission_denied" });
    expect(missing.body.message).toContain("X-CSRF-Token");

    const wrong = await sessionCall(fx.url, LIST_WORKFLOWS, {}, { cookie: s.cookie, csrfToken: "A".repeat(43) });
    expect(wrong.status).toBe(403);
    expect(wrong.body.message).toContain("does not match");

    const cross = await sessionCall(fx.url, LIST_WORKFLOWS, {}, s, { origin: "https://evil.example" });
    expect(cross.status).toBe(403);
    expect(cross.body.message).toContain("https://evil.example");

    // Another session's token does not fit this cookie.
    const other = await signIn(fx.url, key);
    expect((await sessionCall(fx.url, LIST_WORKFLOWS, {}, { cookie: s.cookie, csrfToken: other.csrfToken })).status).toBe(403);
    // No cookie and no key: still the bearer message.
    const anonymous = await sessionCall(fx.url, LIST_WORKFLOWS, {}, { cookie: "", csrfToken: s.csrfToken });
    expect(anonymous.status).toBe(401);
  });

  it("signs out: the session is revoked server-side, the cookie cleared", async () => {
    const s = await signIn(fx.url, key);
    const noCsrf = await fetch(`${fx.url}/console/session`, { method: "DELETE", headers: { cookie: s.cookie } });
    expect(noCsrf.status).toBe(403);
    const out = await fetch(`${fx.url}/console/session`, { method: "DELETE", headers: { cookie: s.cookie, "x-csrf-token": s.csrfToken } });
    expect(out.status).toBe(204);
    expect(out.headers.get("set-cookie")).toContain("Max-Age=0");
    expect(out.headers.get("content-security-policy")).toContain("default-src 'self'");
    // The browser might keep the cookie: the server no longer takes it.
    const after = await sessionCall(fx.url, LIST_WORKFLOWS, {}, s);
    expect(after.status).toBe(401);
    expect(after.body.message).toContain("sign in again");
    expect((await fetch(`${fx.url}/console/session`, { headers: { cookie: s.cookie } })).status).toBe(401);
  });

  it("ends a session after 30 idle minutes, and 12 hours after sign-in however busy", async () => {
    const idle = await signIn(fx.url, key);
    clock += 29 * MINUTE;
    expect((await sessionCall(fx.url, LIST_WORKFLOWS, {}, idle)).status).toBe(200);
    // Use moved the idle expiry on.
    clock += 29 * MINUTE;
    expect((await sessionCall(fx.url, LIST_WORKFLOWS, {}, idle)).status).toBe(200);
    clock += 31 * MINUTE;
    expect((await sessionCall(fx.url, LIST_WORKFLOWS, {}, idle)).status).toBe(401);

    const busy = await signIn(fx.url, key);
    for (let hour = 0; hour < 11; hour++) {
      clock += 20 * MINUTE;
      expect((await sessionCall(fx.url, LIST_WORKFLOWS, {}, busy)).status).toBe(200);
      clock += 20 * MINUTE;
      expect((await sessionCall(fx.url, LIST_WORKFLOWS, {}, busy)).status).toBe(200);
      clock += 20 * MINUTE;
      expect((await sessionCall(fx.url, LIST_WORKFLOWS, {}, busy)).status).toBe(200);
    }
    const expiresAt = async () => Date.parse(((await (await fetch(`${fx.url}/console/session`, { headers: { cookie: busy.cookie } })).json()) as { expiresAt: string }).expiresAt);
    // 11 h in, idle expiry comes first; 11 h 40 min in, the absolute end does.
    expect(await expiresAt()).toBe(clock + 30 * MINUTE);
    clock += 20 * MINUTE;
    expect((await sessionCall(fx.url, LIST_WORKFLOWS, {}, busy)).status).toBe(200);
    clock += 20 * MINUTE;
    expect(await expiresAt()).toBe(clock + 20 * MINUTE);
    clock += 19 * MINUTE + 59_000;
    expect((await sessionCall(fx.url, LIST_WORKFLOWS, {}, busy)).status).toBe(200);
    clock += 2_000;
    expect((await sessionCall(fx.url, LIST_WORKFLOWS, {}, busy)).status).toBe(401);
  });

  it("ends the sessions of a revoked API key", async () => {
    const other = await fx.client(AdminService, await fx.adminKey()).createApiKey({ orgId: "console-a", name: "doomed" });
    const s = await signIn(fx.url, other.secret);
    expect((await sessionCall(fx.url, LIST_WORKFLOWS, {}, s)).status).toBe(200);
    const id = (await listApiKeys(fx.rt.stores.apiKeys, fx.rt.pool, { orgId: "console-a" })).find((k) => k.name === "doomed")!.id;
    await revokeApiKey(fx.rt.stores.apiKeys, fx.rt.pool, id);
    const after = await sessionCall(fx.url, LIST_WORKFLOWS, {}, s);
    expect(after.status).toBe(401);
    expect(after.body.message).toContain("revoked");
    // And the key no longer signs in.
    const again = await signIn(fx.url, other.secret);
    expect(again.status).toBe(401);
    expect(again.body.message).toContain("revoked");
  });

  it("an admin key's session is admin, with no tenant", async () => {
    const s = await signIn(fx.url, await fx.adminKey());
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({ tenant: "", admin: true });
    const flags = await sessionCall(fx.url, "switchyard.api.v1.AdminService/ListFlags", {}, s);
    expect(flags.status).toBe(200);
  });

  it("rate-limits failed sign-ins per address with 429 and Retry-After", async () => {
    // The earlier test spent one of the three failures this address has; two more fill the window.
    let last: Response | undefined;
    for (let i = 0; i < 3; i++) {
      last = await fetch(`${fx.url}/console/session`, { method: "POST", body: JSON.stringify({ apiKey: `wrong-${i}` }) });
    }
    expect(last!.status).toBe(429);
    expect(Number(last!.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await last!.json()).toMatchObject({ code: "RESOURCE_EXHAUSTED" });
    // No trusted proxies here, so X-Forwarded-For is ignored: a forged one does not buy a failing client a fresh budget.
    for (const forged of ["198.51.100.1", "198.51.100.2, 127.0.0.1"]) {
      expect((await signIn(fx.url, BOGUS, { "x-forwarded-for": forged })).status).toBe(429);
    }
  });

  it("signs a good key in from an address over its failure limit, without resetting the count", async () => {
    expect((await signIn(fx.url, BOGUS)).status).toBe(429);
    const s = await signIn(fx.url, key);
    expect(s.status).toBe(200);
    expect((await sessionCall(fx.url, LIST_WORKFLOWS, {}, s)).status).toBe(200);
    expect((await signIn(fx.url, await fx.adminKey())).body).toMatchObject({ admin: true });
    // The successes earned the address no retries.
    expect((await signIn(fx.url, BOGUS)).status).toBe(429);
  });
});

describe("console sign-in behind a trusted proxy", () => {
  // The test's own connections (from 127.0.0.1) play the Ingress controller, whose pods are in 10.1.0.0/16.
  const PROXY = "10.1.0.7";
  let fx: GatewayFixture;
  let key: string;
  const from = (client: string) => ({ "x-forwarded-for": `${client}, ${PROXY}` });
  beforeAll(async () => {
    // Through the config (SWITCHYARD_TRUSTED_PROXIES), as `start gateway` gets it.
    fx = await createGatewayFixture({}, { configure: (config) => ({ ...config, gateway: { ...config.gateway, trustedProxies: ["127.0.0.1", "10.1.0.0/16"] } }) });
    key = await fx.tenant("console-proxied");
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  it("limits the client X-Forwarded-For names, not the proxy: ten bogus sign-ins lock nobody else out", async () => {
    for (let i = 0; i < 10; i++) expect((await signIn(fx.url, BOGUS, from("203.0.113.66"))).status).toBe(401);
    const limited = await signIn(fx.url, BOGUS, from("203.0.113.66"));
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ code: "RESOURCE_EXHAUSTED" });
    // Whatever the bogus client writes into the header itself is left of what the proxy appended, and never read.
    expect((await signIn(fx.url, BOGUS, { "x-forwarded-for": `192.0.2.1, 203.0.113.66, ${PROXY}` })).status).toBe(429);

    // Another person behind the same Ingress: signs in, and still has a whole budget of their own.
    const other = await signIn(fx.url, key, from("198.51.100.20"));
    expect(other.status).toBe(200);
    expect((await signIn(fx.url, BOGUS, from("198.51.100.20"))).status).toBe(401);
    // An admin too; with no header at all the proxy itself is the client, and its budget is untouched.
    expect((await signIn(fx.url, await fx.adminKey(), from("198.51.100.21"))).status).toBe(200);
    expect((await signIn(fx.url, BOGUS)).status).toBe(401);

    // The session records the client, not the proxy.
    const { rows } = await fx.rt.pool.query<{ source: string }>("SELECT source FROM console_sessions");
    expect(rows.map((r) => r.source).sort()).toEqual(["198.51.100.20", "198.51.100.21"]);
  });

  it("signs in a valid key from a client over its limit", async () => {
    expect((await signIn(fx.url, BOGUS, from("203.0.113.66"))).status).toBe(429);
    expect((await signIn(fx.url, key, from("203.0.113.66"))).status).toBe(200);
    expect((await signIn(fx.url, BOGUS, from("203.0.113.66"))).status).toBe(429);
  });

  it("ignores X-Forwarded-For from a peer that is not a trusted proxy: forging it dodges no limit", async () => {
    // 127.0.0.2 is not in the list: a client reaching the gateway beside the proxy.
    for (let i = 0; i < 10; i++) {
      expect((await signInFrom(fx.url, BOGUS, "127.0.0.2", { "x-forwarded-for": `192.0.2.${i}` })).status).toBe(401);
    }
    expect((await signInFrom(fx.url, BOGUS, "127.0.0.2", { "x-forwarded-for": "192.0.2.200" })).status).toBe(429);
    expect((await signInFrom(fx.url, BOGUS, "127.0.0.2", from("198.51.100.99"))).status).toBe(429);
    // Its good key still signs in; the forged addresses were never counted, so the proxy's clients are unaffected.
    expect((await signInFrom(fx.url, key, "127.0.0.2", { "x-forwarded-for": "192.0.2.1" })).status).toBe(200);
    expect((await signIn(fx.url, BOGUS, from("192.0.2.1"))).status).toBe(401);
  });
});

/**
 * The approval-link HTTP handler on a real server: GET confirms without deciding, POST decides once, and bad
 * tokens get 400/401/404 without revealing anything about other tenants.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handleApprovalLink } from "../../src/approvals/link-route.js";
import { createApprovalLinks, signLinkToken } from "../../src/approvals/link-signing.js";
import { getLinkKey } from "../../src/store/approvals/postgres-link-key-store.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { approvalOf, parkTask, snapshot, submitGated } from "./helpers.js";

const ORG = "acme";
const OTHER = "globex";

describe("approval link route", () => {
  let rt: TestRuntime;
  let server: Server;
  let base: string;
  let clockOffsetMs = 0;

  beforeAll(async () => {
    rt = await createTestRuntime();
    await submitGated(rt, ORG, OTHER);
    server = createServer((req, res) => {
      handleApprovalLink(req, res, { pool: rt.pool, stores: rt.stores, tasks: rt.tasks, clock: () => Date.now() + clockOffsetMs, maxBodyBytes: 4096 })
        .then((handled) => {
          if (!handled) res.writeHead(404, { "content-type": "text/plain" }).end("not mine\n");
        })
        .catch((error: unknown) => res.writeHead(500).end(String(error)));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rt.cleanup();
  });

  async function links(orgId = ORG) {
    const parked = await parkTask(rt, orgId);
    const made = await createApprovalLinks(rt.stores, rt.pool, { orgId, approvalId: parked.approvalId, baseUrl: base });
    return { ...parked, ...made, approve: new URL(made.approveUrl).searchParams.get("token")!, deny: new URL(made.denyUrl).searchParams.get("token")! };
  }

  function post(token: string, options: { via?: "form" | "query"; body?: string } = {}) {
    if (options.via === "query") return fetch(`${base}/approvals/decide?token=${encodeURIComponent(token)}`, { method: "POST" });
    return fetch(`${base}/approvals/decide`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: options.body ?? new URLSearchParams({ token }).toString(),
    });
  }

  it("GET shows a confirmation page with a POST button and decides nothing", async () => {
    const l = await links();
    const before = await snapshot(rt, ORG, l.taskId, l.approvalId);
    const res = await fetch(l.approveUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await res.text();
    expect(html).toContain('<form method="post">');
    expect(html).toContain(`name="token" value="${l.approve}"`);
    expect(html).toContain(">Approve</button>");
    expect(html).toContain("publish");
    expect(html).toContain("role:publisher");
    // HEAD (link checkers) is a GET without a body.
    expect((await fetch(l.approveUrl, { method: "HEAD" })).status).toBe(200);
    expect(await snapshot(rt, ORG, l.taskId, l.approvalId)).toEqual(before);
    expect(before.approval.status).toBe("pending");
  });

  it("POST decides once; later posts of any link answer with the first outcome", async () => {
    const l = await links();
    const first = await post(l.approve);
    expect(first.status).toBe(200);
    expect(await first.text()).toBe("Approved. The step continues.\n");
    expect(await approvalOf(rt.pool, ORG, l.approvalId)).toMatchObject({ status: "approved", decidedBy: `link:${l.kid}`, decidedVia: "link" });
    const before = await snapshot(rt, ORG, l.taskId, l.approvalId);
    expect(before.work).toBe(1);

    const again = await post(l.approve);
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(`Already approved by link:${l.kid}; this link changed nothing.\n`);
    const deny = await post(l.deny, { via: "query" });
    expect(deny.status).toBe(200);
    expect(await deny.text()).toBe(`Already approved by link:${l.kid}; this link changed nothing.\n`);
    const page = await fetch(l.denyUrl);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`already approved by link:${l.kid}`);
    expect(html).not.toContain("<form");
    expect(await snapshot(rt, ORG, l.taskId, l.approvalId)).toEqual(before);
  });

  it("POST with the token in the query denies: the step fails closed", async () => {
    const l = await links();
    const res = await post(l.deny, { via: "query" });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("Denied. The step fails closed.\n");
    expect((await rt.tasks.get(ORG, l.taskId)).status).toBe("failed");
  });

  it("refuses bad tokens with 400, 401 or 404, changing nothing and naming no other tenant", async () => {
    const l = await links();
    const theirs = await parkTask(rt, OTHER);
    const key = (await getLinkKey(rt.pool, ORG, l.kid))!;
    const [payload, sig] = l.approve.split(".") as [string, string];
    const forged = `${payload}.${sig[0] === "A" ? "B" : "A"}${sig.slice(1)}`;
    const wrongTenant = signLinkToken(key, { approvalId: theirs.approvalId, decision: "approve", expiresAtMs: Date.now() + 60_000, orgId: ORG });
    const unknown = signLinkToken(key, { approvalId: "00000000-0000-4000-8000-000000000000", decision: "approve", expiresAtMs: Date.now() + 60_000, orgId: ORG });
    const mine = await snapshot(rt, ORG, l.taskId, l.approvalId);
    const other = await snapshot(rt, OTHER, theirs.taskId, theirs.approvalId);

    const cases: Array<[string, Promise<Response>, number, RegExp]> = [
      ["malformed", post("garbage"), 400, /malformed/],
      ["forged", post(forged), 401, /signature does not match/],
      ["forged GET", fetch(`${base}/approvals/decide?token=${forged}`), 401, /signature does not match/],
      ["wrong tenant", post(wrongTenant), 404, /^no such approval\n$/],
      ["wrong tenant GET", fetch(`${base}/approvals/decide?token=${wrongTenant}`), 404, /^no such approval\n$/],
      ["unknown approval", post(unknown), 404, /^no such approval\n$/],
      ["no token", post("", { body: "" }), 400, /no token/],
      ["GET without token", fetch(`${base}/approvals/decide`), 400, /no token/],
      ["too large", post("", { body: `token=${"x".repeat(5000)}` }), 413, /too large/],
      ["other method", fetch(`${base}/approvals/decide`, { method: "PUT" }), 405, /POST/],
    ];
    for (const [what, pending, status, text] of cases) {
      const res = await pending;
      const body = await res.text();
      expect({ what, status: res.status }).toEqual({ what, status });
      expect(body).toMatch(text);
      expect(body).not.toContain(OTHER);
      expect(body).not.toContain(theirs.approvalId);
      expect(body).not.toContain(theirs.taskId);
    }
    clockOffsetMs = Date.parse(l.expiresAt) - Date.now() + 1000;
    try {
      const expired = await post(l.approve);
      expect(expired.status).toBe(401);
      expect(await expired.text()).toMatch(/expired/);
    } finally {
      clockOffsetMs = 0;
    }
    expect(await snapshot(rt, ORG, l.taskId, l.approvalId)).toEqual(mine);
    expect(await snapshot(rt, OTHER, theirs.taskId, theirs.approvalId)).toEqual(other);
  });

  it("leaves other paths to the rest of the server", async () => {
    const res = await fetch(`${base}/approvals/decided`);
    expect(res.status).toBe(404);
    expect(await res.text()).toBe("not mine\n");
    expect((await fetch(`${base}/healthz`)).status).toBe(404);
  });
});

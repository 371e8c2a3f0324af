/**
 * Where a credential may go. A payload naming another host than the connection's never causes a dial (issue 9,
 * confirmation 4); a connection whose API is on a private address needs the operator's allowlist; a connection of
 * another tenant is never used; two coordinators dial each reply once; and no log line or stored message ever
 * carries a token.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { startProviderStub, type ProviderStub } from "../support/provider-stubs.js";
import { GITEA_ADDRESS, GITHUB_ADDRESS, SLACK_ADDRESS, insertConnection, insertReply, insertTask, loopbackSender, newTenant, readReply, type TestSender } from "./sender-support.js";

describe("reply sender: where the credential goes", () => {
  let db: TestDatabase;
  const stubs: ProviderStub[] = [];
  const senders: TestSender[] = [];
  const tokens: string[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(senders.map((s) => s.sender.close()));
    await Promise.all(stubs.map((s) => s.close()));
    await db.drop();
  });
  const stub = async (kind: Parameters<typeof startProviderStub>[0], token: string) => {
    const s = await startProviderStub(kind, { token });
    stubs.push(s);
    tokens.push(token);
    return s;
  };
  const sender = (...args: Parameters<typeof loopbackSender> extends [unknown, ...infer R] ? R : never) => {
    const s = loopbackSender(db.pool, ...args);
    senders.push(s);
    return s;
  };

  it("an address naming another forge host than the connection's account key: no request at all", async () => {
    const github = await stub("github", "ghp_mismatch_token");
    const org = await newTenant(db.pool);
    const connectionId = await insertConnection(db.pool, { org, kind: "github", accountKey: "github.com", apiBaseUrl: github.apiBaseUrl, secret: "ghp_mismatch_token" });
    // The verb would not have picked this connection; the sender refuses anyway (defence in depth).
    const otherHost = await insertTask(db.pool, org, { ...GITHUB_ADDRESS, host: "evil.example" });
    const otherKind = await insertTask(db.pool, org, GITEA_ADDRESS);
    const a = await insertReply(db.pool, { org, taskId: otherHost, connectionId, text: "leak?" });
    const b = await insertReply(db.pool, { org, taskId: otherKind, connectionId, text: "leak?" });
    const { sender: s } = sender();

    await s.runOnce();

    expect(github.requests).toHaveLength(0);
    const rowA = await readReply(db.pool, a);
    expect(rowA).toMatchObject({ state: "failed", code: "address_mismatch" });
    expect(rowA.message).toContain("evil.example");
    expect(await readReply(db.pool, b)).toMatchObject({ state: "failed", code: "address_mismatch" });
  });

  it("a connection whose API base URL is loopback, without the operator allowlist: egress_refused, zero requests", async () => {
    const gitea = await stub("gitea", "gitea_private_token");
    const org = await newTenant(db.pool);
    const connectionId = await insertConnection(db.pool, { org, kind: "gitea", accountKey: "gitea.example", apiBaseUrl: gitea.apiBaseUrl, secret: "gitea_private_token" });
    const replyId = await insertReply(db.pool, { org, taskId: await insertTask(db.pool, org, GITEA_ADDRESS), connectionId, text: "hello" });
    const { sender: s, metrics } = sender({ egress: { connectTimeoutMs: 1_000 } });

    await s.runOnce();

    expect(gitea.requests).toHaveLength(0);
    const row = await readReply(db.pool, replyId);
    expect(row).toMatchObject({ state: "failed", code: "egress_refused" });
    expect(row.message).toMatch(/loopback address.*SWITCHYARD_EGRESS_ALLOWED_NETWORKS/);
    expect(await metrics.registry.getSingleMetricAsString("switchyard_origin_reply_dials_total")).toContain('{kind="gitea",outcome="failed"} 1');
  });

  it("a host name resolving to a private address is refused the same way (DNS checked, then pinned)", async () => {
    const github = await stub("github", "ghp_dns_token");
    const org = await newTenant(db.pool);
    const apiBaseUrl = `http://ghe.internal.example:${new URL(github.origin).port}`;
    const connectionId = await insertConnection(db.pool, { org, kind: "github", accountKey: "github.com", apiBaseUrl, secret: "ghp_dns_token" });
    const replyId = await insertReply(db.pool, { org, taskId: await insertTask(db.pool, org, GITHUB_ADDRESS), connectionId, text: "hello" });
    const resolver = async () => ["10.1.2.3"];
    const { sender: s } = sender({ egress: { resolver, allowedNetworks: ["127.0.0.0/8"] } });
    await s.runOnce();
    expect(await readReply(db.pool, replyId)).toMatchObject({ state: "failed", code: "egress_refused" });
    expect(github.requests).toHaveLength(0);

    // With the name resolving to the admitted loopback, the request goes to the pinned address, named as the host.
    const again = await insertReply(db.pool, { org, taskId: await insertTask(db.pool, org, GITHUB_ADDRESS), connectionId, text: "hello again" });
    const { sender: admitted } = sender({ egress: { resolver: async () => ["127.0.0.1"], allowedNetworks: ["127.0.0.0/8"] } });
    await admitted.runOnce();
    expect((await readReply(db.pool, again)).state).toBe("sent");
    expect(github.requests.map((r) => r.headers.host)).toEqual([new URL(apiBaseUrl).host]);
  });

  it("a target the connection's allowlist no longer admits is never dialed", async () => {
    const github = await stub("github", "ghp_targets_token");
    const org = await newTenant(db.pool);
    const connectionId = await insertConnection(db.pool, { org, kind: "github", accountKey: "github.com", apiBaseUrl: github.apiBaseUrl, secret: "ghp_targets_token" });
    await db.pool.query("UPDATE connections SET targets = '{other/*}' WHERE id = $1", [connectionId]);
    const replyId = await insertReply(db.pool, { org, taskId: await insertTask(db.pool, org, GITHUB_ADDRESS), connectionId, text: "x" });
    const { sender: s } = sender();
    await s.runOnce();
    expect(await readReply(db.pool, replyId)).toMatchObject({ state: "failed", code: "target_not_allowed" });
    expect(github.requests).toHaveLength(0);
    await db.pool.query("UPDATE connections SET targets = '{acme/*}' WHERE id = $1", [connectionId]);
    const admitted = await insertReply(db.pool, { org, taskId: await insertTask(db.pool, org, GITHUB_ADDRESS), connectionId, text: "y" });
    await s.runOnce();
    expect((await readReply(db.pool, admitted)).state).toBe("sent");
  });

  it("a reply whose connection belongs to another tenant is never dialed", async () => {
    const github = await stub("github", "ghp_tenant_a_token");
    const orgA = await newTenant(db.pool);
    const orgB = await newTenant(db.pool);
    const connectionOfA = await insertConnection(db.pool, { org: orgA, kind: "github", accountKey: "github.com", apiBaseUrl: github.apiBaseUrl, secret: "ghp_tenant_a_token" });
    const taskOfB = await insertTask(db.pool, orgB, GITHUB_ADDRESS);
    // A row for B's task naming A's connection (only a bug upstream could write it).
    const replyId = await insertReply(db.pool, { org: orgB, taskId: taskOfB, connectionId: connectionOfA, text: "cross-tenant" });
    const { sender: s } = sender();
    await s.runOnce();
    expect(await readReply(db.pool, replyId)).toMatchObject({ state: "failed", code: "no_connection" });
    expect(github.requests).toHaveLength(0);
  });

  it("a stored address that does not validate, or none, is never dialed; neither is a row whose tenant switched replies off", async () => {
    const github = await stub("github", "ghp_invalid_token");
    const org = await newTenant(db.pool);
    const connectionId = await insertConnection(db.pool, { org, kind: "github", accountKey: "github.com", apiBaseUrl: github.apiBaseUrl, secret: "ghp_invalid_token" });
    const traversal = await insertReply(db.pool, { org, taskId: await insertTask(db.pool, org, { ...GITHUB_ADDRESS, repository: "acme/../../admin" }), connectionId, text: "x" });
    const none = await insertReply(db.pool, { org, taskId: await insertTask(db.pool, org, null), connectionId, text: "x" });
    const { sender: s } = sender();
    await s.runOnce();
    expect(await readReply(db.pool, traversal)).toMatchObject({ state: "failed", code: "invalid_address" });
    expect(await readReply(db.pool, none)).toMatchObject({ state: "failed", code: "no_reply_address" });

    const switchedOff = await insertReply(db.pool, { org, taskId: await insertTask(db.pool, org, GITHUB_ADDRESS), connectionId, text: "x" });
    const { sender: off } = sender({ replyEnabled: (o) => o !== org });
    await off.runOnce();
    expect(await readReply(db.pool, switchedOff)).toMatchObject({ state: "failed", code: "reply_disabled" });
    expect(github.requests).toHaveLength(0);
  });

  it("two senders (two coordinators) on the same rows dial each reply exactly once", async () => {
    const slack = await stub("slack", "xoxb-two-senders");
    // Six connections (one connection's rows are dialed one at a time, by one sender), five rows each.
    const ids: string[] = [];
    for (let c = 0; c < 6; c++) {
      const org = await newTenant(db.pool);
      const connectionId = await insertConnection(db.pool, { org, kind: "slack", accountKey: "T0STUB", apiBaseUrl: slack.apiBaseUrl, secret: "xoxb-two-senders" });
      const taskId = await insertTask(db.pool, org, SLACK_ADDRESS);
      for (let i = 0; i < 5; i++) ids.push(await insertReply(db.pool, { org, taskId, connectionId, text: `update ${c}.${i}` }));
    }
    const one = sender({ concurrency: 3 });
    const two = sender({ concurrency: 3 });

    const [a, b] = await Promise.all([one.sender.runOnce(), two.sender.runOnce()]);

    expect(a + b).toBe(30);
    // Both took a share (neither sat idle behind the other's locks).
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(0);
    const posts = slack.requests.filter((r) => r.method === "POST").map((r) => (JSON.parse(r.body) as { text: string }).text);
    expect(posts).toHaveLength(30);
    expect(new Set(posts).size).toBe(30);
    const { rows } = await db.pool.query("SELECT state, dial_attempts, count(*)::int AS n FROM origin_replies WHERE id = ANY($1) GROUP BY 1, 2", [ids]);
    expect(rows).toEqual([{ state: "sent", dial_attempts: 1, n: 30 }]);
  });

  it("a provider echoing the token in its error text: the stored message and the logs carry [redacted]", async () => {
    const cairn = await stub("cairn", "cairn-echoed-secret-777");
    const org = await newTenant(db.pool);
    const connectionId = await insertConnection(db.pool, { org, kind: "cairn", accountKey: "https://cairn.example", apiBaseUrl: cairn.apiBaseUrl, secret: "cairn-echoed-secret-777" });
    const replyId = await insertReply(db.pool, { org, taskId: await insertTask(db.pool, org, { kind: "cairn_comment", baseUrl: "https://cairn.example", artifactId: "a1" }), connectionId, text: "x" });
    cairn.enqueue({ type: "status", status: 403, error: "token cairn-echoed-secret-777 may not write annotations" });
    const { sender: s, log } = sender();
    await s.runOnce();
    const row = await readReply(db.pool, replyId);
    expect(row).toMatchObject({ state: "failed", code: "provider_rejected", message: "cairn answered HTTP 403: token [redacted] may not write annotations" });
    expect(log.lines.join("")).toContain("[redacted]");
  });

  it("no log line of any sender in this file, and no stored message, contains a connection token", async () => {
    // Every sender above logged at debug level; every token the stubs accepted is searched for.
    const logs = senders.flatMap((s) => s.log.lines).join("\n");
    expect(logs.length).toBeGreaterThan(0);
    expect(logs).toContain("origin reply");
    const { rows } = await db.pool.query<{ message: string | null; permalink: string | null }>("SELECT message, permalink FROM origin_replies");
    const stored = JSON.stringify(rows);
    for (const token of tokens) {
      expect(logs).not.toContain(token);
      expect(stored).not.toContain(token);
    }
  });
});

/**
 * ConnectionService through a real gateway: a tenant key manages only its own tenant's connections, an admin key
 * names the tenant, a gateway without an encryption key refuses to add (confirmation 5), and no response (binary
 * or JSON), log line, audit row or metric ever carries a secret (confirmation 7, API side).
 */
import { Writable } from "node:stream";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiTransport } from "../../src/cli/remote/transport.js";
import { startGateway, type Gateway } from "../../src/gateway/server.js";
import { ConnectionKind, ConnectionService } from "../../src/gen/switchyard/api/v1/connections_pb.js";
import { ErrorDetailSchema } from "../../src/gen/switchyard/api/v1/errors_pb.js";
import { createLogger } from "../../src/logger.js";
import { createApiKey } from "../../src/tenancy/api-keys.js";
import { createTenantWithKey } from "../../src/tenancy/bootstrap.js";
import { ENCRYPTION_KEY_VARIABLE, parseEncryptionKeys } from "../../src/vault/secret-cipher.js";
import { postJson } from "../gateway/fixture.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { keyItem, uniqueSecret } from "./helpers.js";

/** Every error a call answered with, kept for the final grep (message and details). */
const errorBodies: string[] = [];

async function connectError(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (error) {
    const connect = ConnectError.from(error);
    errorBodies.push(connect.message, JSON.stringify(connect.findDetails(ErrorDetailSchema)));
    return connect;
  }
  throw new Error("expected the call to fail");
}

describe("ConnectionService", () => {
  let rt: TestRuntime;
  let gateway: Gateway;
  let keyless: Gateway;
  let logs = "";
  const secrets: string[] = [];
  const responses: unknown[] = [];
  let acmeKey: string;
  let globexKey: string;
  let adminKey: string;

  const secret = (prefix?: string) => {
    const s = uniqueSecret(prefix);
    secrets.push(s);
    return s;
  };
  const client = (token: string, options: { tenant?: string; url?: string } = {}) =>
    createClient(ConnectionService, createApiTransport({ url: options.url ?? gateway.url, token, ...(options.tenant ? { tenant: options.tenant } : {}) }));
  /** A response, kept for the final grep. */
  const seen = <T>(value: T): T => {
    responses.push(value);
    return value;
  };

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logs += chunk.toString();
        done();
      },
    });
    rt = await createTestRuntime({ logger: createLogger({ level: "debug", destination: sink }) });
    const withKey = { ...rt, config: { ...rt.config, origin: { ...rt.config.origin, encryptionKeys: parseEncryptionKeys(keyItem("k1")) } } };
    gateway = await startGateway(withKey, { port: 0, host: "127.0.0.1", shutdownGraceMs: 2000 });
    keyless = await startGateway(rt, { port: 0, host: "127.0.0.1", shutdownGraceMs: 2000, collectMetrics: false });
    acmeKey = (await createTenantWithKey(rt.stores, rt.pool, { orgId: "acme", name: "Acme" })).apiKey.secret;
    globexKey = (await createTenantWithKey(rt.stores, rt.pool, { orgId: "globex", name: "Globex" })).apiKey.secret;
    adminKey = (await createApiKey(rt.stores.apiKeys, rt.pool, { kind: "admin", name: "sre" })).secret;
  });
  afterAll(async () => {
    await keyless?.close();
    await gateway?.close();
    await rt?.cleanup();
  });

  it("a tenant key adds, lists, rotates and deletes its own connections; responses show the fingerprint only", async () => {
    const acme = client(acmeKey);
    const first = secret();
    const added = seen(await acme.add({ kind: ConnectionKind.GITHUB, accountKey: "GitHub.com", targets: ["acme/*"], secret: first, actor: "alice" }));
    expect(added.connection).toMatchObject({ kind: ConnectionKind.GITHUB, accountKey: "github.com", apiBaseUrl: "https://api.github.com", targets: ["acme/*"], createdBy: "alice (apikey:default)" });
    expect(added.connection!.fingerprint).toMatch(/^fp_[0-9a-f]{16}$/);
    const id = added.connection!.id;

    const listed = seen(await acme.list({}));
    expect(listed.connections.map((c) => [c.id, c.fingerprint])).toEqual([[id, added.connection!.fingerprint]]);

    const duplicate = await connectError(acme.add({ kind: ConnectionKind.GITHUB, accountKey: "github.com", secret: secret() }));
    expect(duplicate.code).toBe(Code.AlreadyExists);
    expect(duplicate.rawMessage).toContain("tenant acme already has a github connection for github.com");

    const rotated = seen(await acme.rotate({ id, secret: secret() }));
    expect(rotated.connection!.fingerprint).not.toBe(added.connection!.fingerprint);
    expect(rotated.connection!.rotatedAt).toBeDefined();
    expect(rotated.connection!.createdBy).toBe("alice (apikey:default)");

    const deleted = seen(await acme.delete({ id }));
    expect(deleted.connection!.id).toBe(id);
    expect((await acme.list({})).connections).toEqual([]);
  });

  it("speaks JSON the way curl would, and refuses bad input without quoting the secret", async () => {
    const s = secret("xoxb-");
    const added = seen(await postJson(gateway.url, "switchyard.api.v1.ConnectionService/Add", { kind: "CONNECTION_KIND_SLACK", accountKey: "t0acme", targets: ["c01"], secret: s }, acmeKey));
    expect(added.status).toBe(200);
    expect(added.body.connection).toMatchObject({ kind: "CONNECTION_KIND_SLACK", accountKey: "T0ACME", apiBaseUrl: "https://slack.com/api", targets: ["C01"] });
    expect(Object.keys(added.body.connection)).not.toContain("secret");

    const badSecret = ` ${secret()} `;
    const bad = seen(await postJson(gateway.url, "switchyard.api.v1.ConnectionService/Add", { kind: "CONNECTION_KIND_GITEA", accountKey: "git.example/x", apiBaseUrl: "https://u:p@git.example", secret: badSecret }, acmeKey));
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("invalid_argument");
    expect(bad.body.message).toMatch(/^3 problems: account_key: .*; api_base_url: must not carry credentials.*; secret: must not start or end with whitespace$/);
    const unspecified = seen(await postJson(gateway.url, "switchyard.api.v1.ConnectionService/Add", { accountKey: "github.com", secret: secret() }, acmeKey));
    expect(unspecified.status).toBe(400);
    expect(unspecified.body.message).toContain("kind: must be GITHUB, GITEA, SLACK or CAIRN");
  });

  it("a tenant key never reaches another tenant's connections; an admin key acts for the tenant it names", async () => {
    const acme = client(acmeKey);
    const globex = client(globexKey);
    const own = seen(await acme.add({ kind: ConnectionKind.GITEA, accountKey: "git.example", secret: secret() }));
    const id = own.connection!.id;

    expect((await globex.list({})).connections.map((c) => c.id)).not.toContain(id);
    expect((await connectError(globex.rotate({ id, secret: secret() }))).code).toBe(Code.NotFound);
    expect((await connectError(globex.delete({ id }))).code).toBe(Code.NotFound);
    // Naming the other tenant does not help a tenant key.
    expect((await connectError(client(globexKey, { tenant: "acme" }).list({}))).code).toBe(Code.PermissionDenied);
    // Globex adding the same account gets its own connection.
    const theirs = seen(await globex.add({ kind: ConnectionKind.GITEA, accountKey: "git.example", secret: secret() }));
    expect(theirs.connection!.id).not.toBe(id);

    // An admin key must name the tenant, and then manages that tenant's connections.
    expect((await connectError(client(adminKey).list({}))).code).toBe(Code.InvalidArgument);
    expect((await connectError(client(adminKey, { tenant: "ghost" }).list({}))).code).toBe(Code.NotFound);
    const asAcme = client(adminKey, { tenant: "acme" });
    expect((await asAcme.list({})).connections.map((c) => c.id)).toContain(id);
    const rotated = seen(await asAcme.rotate({ id, secret: secret(), actor: "sre-ana" }));
    expect(rotated.connection!.id).toBe(id);
    const { rows } = await rt.pool.query("SELECT org_id, actor, verdict FROM audit_log WHERE action = 'connection' AND destination = $1 ORDER BY seq", [`connection:${id}`]);
    expect(rows).toEqual([
      { org_id: "acme", actor: "apikey:default", verdict: "added" },
      { org_id: "acme", actor: "sre-ana (apikey:sre)", verdict: "rotated" },
    ]);
  });

  it("a gateway without an encryption key refuses to add, naming the variable, and stores nothing (confirmation 5)", async () => {
    const before = (await rt.pool.query("SELECT count(*)::int AS n FROM connections")).rows[0].n;
    const refused = await connectError(client(acmeKey, { url: keyless.url }).add({ kind: ConnectionKind.CAIRN, accountKey: "https://cairn.example", secret: secret() }));
    expect(refused.code).toBe(Code.FailedPrecondition);
    expect(refused.rawMessage).toContain(`adding a connection is refused: no encryption key is configured`);
    expect(refused.rawMessage).toContain(ENCRYPTION_KEY_VARIABLE);
    expect((await rt.pool.query("SELECT count(*)::int AS n FROM connections")).rows[0].n).toBe(before);
    // Listing needs no key: there is nothing secret in it.
    expect((await client(acmeKey, { url: keyless.url }).list({})).connections.length).toBeGreaterThan(0);
  });

  it("no response, log line, audit row or metric contains any secret used here (confirmation 7)", async () => {
    expect(secrets.length).toBeGreaterThanOrEqual(8);
    // The capture works: the changes were logged, with their fingerprints.
    expect(logs).toContain('"msg":"connection added"');
    expect(logs).toContain('"msg":"connection secret rotated"');
    expect(logs).toMatch(/"fingerprint":"fp_[0-9a-f]{16}"/);
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    const audit = JSON.stringify((await rt.pool.query("SELECT * FROM audit_log")).rows);
    const stored = JSON.stringify((await rt.pool.query("SELECT * FROM connections")).rows);
    const bodies = JSON.stringify([responses, errorBodies], (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
    expect(errorBodies.length).toBeGreaterThanOrEqual(10);
    expect(audit).toContain("fingerprint fp_");
    for (const s of secrets) {
      const bare = s.trim();
      expect(logs, "log").not.toContain(bare);
      expect(bodies, "responses").not.toContain(bare);
      expect(audit, "audit_log").not.toContain(bare);
      expect(metrics, "metrics").not.toContain(bare);
      expect(stored, "connections table").not.toContain(bare);
    }
  });
});

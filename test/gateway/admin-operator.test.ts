/**
 * AdminService's operator calls behind `policy set|get`, `shards` and `vault rewrap` (issue 27 §4: the CLI's direct
 * mode runs these same handlers in-process): what they answer through a gateway, that a tenant key is refused
 * them, and that RewrapSecrets re-seals with the key ring of the gateway that serves it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, createClient } from "@connectrpc/connect";
import { shardOf } from "../../src/bus/shards.js";
import { createApiTransport } from "../../src/cli/remote/transport.js";
import { switchyardErrorOf } from "../../src/cli/remote/remote-api.js";
import { startGateway, type Gateway } from "../../src/gateway/server.js";
import { AdminService } from "../../src/gen/switchyard/api/v1/admin_pb.js";
import { ConnectionKind, ConnectionService } from "../../src/gen/switchyard/api/v1/connections_pb.js";
import { parseEncryptionKeys } from "../../src/vault/secret-cipher.js";
import { keyItem, uniqueSecret } from "../vault/helpers.js";
import { codeOf, createGatewayFixture, type GatewayFixture } from "./fixture.js";

const SHARDS = 4;
const k1 = keyItem("k1");
const k2 = keyItem("k2");

describe("AdminService operator calls through a gateway", () => {
  let fx: GatewayFixture;
  /** A second gateway on the same runtime whose ring has k2 first (k1 kept): the one that re-seals. */
  let rotated: Gateway;
  let adminKey: string;
  let tenantKey: string;

  beforeAll(async () => {
    fx = await createGatewayFixture({}, { configure: (config) => ({ ...config, origin: { ...config.origin, encryptionKeys: parseEncryptionKeys(k1) } }) });
    rotated = await startGateway({ ...fx.rt, config: { ...fx.rt.config, origin: { ...fx.rt.config.origin, encryptionKeys: parseEncryptionKeys(`${k2},${k1}`) } } }, { port: 0, host: "127.0.0.1", shutdownGraceMs: 2000 });
    adminKey = await fx.adminKey();
    tenantKey = await fx.tenant("acme");
  });
  afterAll(async () => {
    await rotated?.close();
    await fx?.cleanup();
  });

  it("refuses every one of them to a tenant key", async () => {
    const admin = fx.client(AdminService, tenantKey);
    expect(await codeOf(admin.setTenantPolicy({ orgId: "acme", source: "default: deny\n" }))).toBe(Code.PermissionDenied);
    expect(await codeOf(admin.getTenantPolicy({ orgId: "acme" }))).toBe(Code.PermissionDenied);
    expect(await codeOf(admin.listShards({}))).toBe(Code.PermissionDenied);
    expect(await codeOf(admin.rewrapSecrets({}))).toBe(Code.PermissionDenied);
    // Nothing was stored by the refused call.
    expect((await fx.client(AdminService, adminKey).getTenantPolicy({ orgId: "acme" })).builtin).toBe(true);
  });

  it("stores policy versions, answers the latest, and refuses an invalid one with its field path", async () => {
    const admin = fx.client(AdminService, adminKey);
    const builtin = await admin.getTenantPolicy({ orgId: "acme" });
    expect(builtin.version).toBeUndefined();
    expect(builtin).toMatchObject({ builtin: true, document: { default: "allow", over_budget: "deny" } });

    const source = 'default: deny\nrules:\n  - id: allow-echo\n    destination: "role:echo"\n    verdict: allow\n    reason: echo is harmless\n';
    expect((await admin.setTenantPolicy({ orgId: "acme", source })).version).toBe(1);
    expect((await admin.setTenantPolicy({ orgId: "acme", source })).version).toBe(2);
    const latest = await admin.getTenantPolicy({ orgId: "acme" });
    expect(latest).toMatchObject({ version: 2, builtin: false, document: { default: "deny", clearance: {}, rules: [{ id: "allow-echo", destination: ["role:echo"], verdict: "allow" }] } });

    const invalid = switchyardErrorOf(await admin.setTenantPolicy({ orgId: "acme", source: "default: maybe\n" }).catch((error: unknown) => error), fx.url);
    expect(invalid).toMatchObject({ code: "INVALID_POLICY", details: { path: "default" } });
    const unknown = switchyardErrorOf(await admin.setTenantPolicy({ orgId: "nobody", source }).catch((error: unknown) => error), fx.url);
    expect(unknown.code).toBe("NOT_FOUND");
    expect((await admin.getTenantPolicy({ orgId: "acme" })).version).toBe(2);
  });

  it("answers the shard count, the live coordinators and every lease, and a tenant's shard", async () => {
    const admin = fx.client(AdminService, adminKey);
    // No coordinator ran: the gateway's own count, no members, no leases.
    const before = await admin.listShards({});
    expect(before).toMatchObject({ shardCount: fx.rt.config.shards.count, members: [], leases: [] });
    expect(before.tenantShard).toBeUndefined();

    const shards = fx.rt.stores.coordinator.shards;
    await shards.recordShardCount(fx.rt.pool, SHARDS);
    await shards.heartbeatMember(fx.rt.pool, { coordinatorId: "c1", host: "h1", pid: 42 }, 60_000);
    const held = await shards.acquireShards(fx.rt.pool, "c1", [0, 2], 60_000);

    const after = await admin.listShards({ orgId: "acme" });
    expect(after.shardCount).toBe(SHARDS);
    expect(after.tenantShard).toBe(shardOf("acme", SHARDS));
    expect(after.members).toMatchObject([{ coordinatorId: "c1", host: "h1", pid: 42 }]);
    expect(after.leases.map((l) => ({ shard: l.shard, owner: l.owner, token: l.token, live: l.live }))).toEqual([
      { shard: 0, owner: "c1", token: BigInt(held.get(0)!), live: true },
      { shard: 1, owner: undefined, token: 0n, live: false },
      { shard: 2, owner: "c1", token: BigInt(held.get(2)!), live: true },
      { shard: 3, owner: undefined, token: 0n, live: false },
    ]);
    expect(after.leases[0]!.expiresAt!.seconds).toBeGreaterThan(after.members[0]!.joinedAt!.seconds);
  });

  it("re-seals with the ring of the gateway that serves the call", async () => {
    await fx.client(ConnectionService, tenantKey).add({ kind: ConnectionKind.SLACK, accountKey: "T0ACME", secret: uniqueSecret("xoxb-") });
    const viaK1 = fx.client(AdminService, adminKey);
    const viaRotated = createClient(AdminService, createApiTransport({ url: rotated.url, token: adminKey }));

    // The gateway whose ring is k1 alone finds nothing sealed with an older key.
    expect(await viaK1.rewrapSecrets({})).toMatchObject({ keyId: "k1", connections: 0, ingestSecrets: 0 });
    // The one with k2 first moves the secret to k2; a second run finds nothing left, for the tenant or at all.
    expect(await viaRotated.rewrapSecrets({ orgId: "acme" })).toMatchObject({ keyId: "k2", connections: 1, ingestSecrets: 0 });
    expect(await viaRotated.rewrapSecrets({})).toMatchObject({ keyId: "k2", connections: 0, ingestSecrets: 0 });
    // Now the k1-only ring cannot open it: refused, nothing changed.
    const stuck = switchyardErrorOf(await viaK1.rewrapSecrets({}).catch((error: unknown) => error), fx.url);
    expect(stuck.code).toBe("FAILED_PRECONDITION");
    expect(stuck.message).toMatch(/sealed with key "k2"/);
  });
});

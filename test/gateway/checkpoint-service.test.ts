/**
 * CheckpointService (issue 27 §4: `audit checkpoint`, `audit checkpoints export|rotate-key|keys` run these handlers,
 * in-process in direct mode): admin keys only; a head signed with a key held elsewhere is stored from its
 * signature alone, after the checks a signature by the database key gets.
 */
import { generateKeyPairSync } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CheckpointService, CheckpointSignStatus } from "../../src/gen/switchyard/api/v1/checkpoints_pb.js";
import { checkpointToProto } from "../../src/gateway/convert/audit.js";
import { parseOperatorKey, signCheckpoint } from "../../src/governance/checkpoint-signing.js";
import { parseCheckpointLines } from "../../src/governance/checkpoint-export.js";
import { appendRows } from "../checkpoints/chain.js";
import { createGatewayFixture, type GatewayFixture } from "./fixture.js";

async function codeOf(promise: Promise<unknown>): Promise<Code | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return ConnectError.from(error).code;
  }
}

describe("CheckpointService through a gateway", () => {
  let fx: GatewayFixture;
  let admin: ReturnType<typeof fx.client<typeof CheckpointService>>;
  let tenantKey: string;
  beforeAll(async () => {
    fx = await createGatewayFixture();
    tenantKey = await fx.tenant("acme");
    await fx.tenant("globex");
    admin = fx.client(CheckpointService, await fx.adminKey());
    await appendRows(fx.rt.pool, "acme", 5);
    await appendRows(fx.rt.pool, "globex", 3);
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  it("refuses a tenant key, even for its own tenant", async () => {
    const asTenant = fx.client(CheckpointService, tenantKey);
    expect(await codeOf(asTenant.sign({ orgId: "acme" }))).toBe(Code.PermissionDenied);
    expect(await codeOf(asTenant.export({ orgId: "acme" }))).toBe(Code.PermissionDenied);
    expect(await codeOf(asTenant.rotateKey({}))).toBe(Code.PermissionDenied);
  });

  it("signs with the database key once per head, and exports every tenant's checkpoints", async () => {
    const signed = await admin.sign({ orgId: "acme" });
    expect(signed.status).toBe(CheckpointSignStatus.SIGNED);
    expect(signed.checkpoint).toMatchObject({ orgId: "acme", seq: 5n, kid: expect.stringMatching(/^ck_/) });
    const again = await admin.sign({ orgId: "acme" });
    expect(again).toMatchObject({ status: CheckpointSignStatus.UNCHANGED, checkpoint: { seq: 5n, signature: signed.checkpoint!.signature } });
    const empty = await admin.sign({ orgId: "nobody" });
    expect(empty.status).toBe(CheckpointSignStatus.UNCHANGED);
    expect(empty.checkpoint).toBeUndefined();
    expect(await codeOf(admin.sign({ orgId: " " }))).toBe(Code.InvalidArgument);

    await admin.sign({ orgId: "globex" });
    const all = parseCheckpointLines((await admin.export({})).jsonl);
    expect(all.map((c) => [c.orgId, c.seq])).toEqual([["acme", 5], ["globex", 3]]);
    expect(parseCheckpointLines((await admin.export({ orgId: "globex" })).jsonl).map((c) => c.orgId)).toEqual(["globex"]);

    const keys = (await admin.listKeys({})).keys;
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ kid: signed.checkpoint!.kid, hasPrivateKey: true });
    const { kid } = await admin.rotateKey({});
    expect((await admin.listKeys({})).keys.map((k) => [k.kid, k.hasPrivateKey, k.retiredAt !== undefined])).toEqual([
      [kid, true, false],
      [signed.checkpoint!.kid, false, true],
    ]);
  });

  it("stores a head signed elsewhere from its signature; the private key never reaches the database", async () => {
    const pem = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    const key = parseOperatorKey(pem);
    await appendRows(fx.rt.pool, "acme", 2);
    const head = await admin.head({ orgId: "acme", publicKey: key.publicKey });
    expect(head.seq).toBe(7n);
    const signed = signCheckpoint({ orgId: "acme", seq: Number(head.seq), hash: head.hash, atMs: Date.now() }, key);

    // A signature that is not the key's, and a kid that is not the key's, are refused before anything is written.
    const forged = { ...signed, signature: signCheckpoint({ ...signed, hash: "ab".repeat(32) }, key).signature };
    expect(await codeOf(admin.store({ checkpoint: checkpointToProto(forged), publicKey: key.publicKey }))).toBe(Code.InvalidArgument);
    expect(await codeOf(admin.store({ checkpoint: checkpointToProto({ ...signed, kid: "ck_0000000000000000" }), publicKey: key.publicKey }))).toBe(Code.InvalidArgument);

    const stored = await admin.store({ checkpoint: checkpointToProto(signed), publicKey: key.publicKey });
    expect(stored).toMatchObject({ status: CheckpointSignStatus.SIGNED, checkpoint: { seq: 7n, kid: key.kid } });
    // The same head signed again later: the checkpoint stored first stands.
    const later = signCheckpoint({ ...signed, atMs: signed.atMs + 1 }, key);
    const again = await admin.store({ checkpoint: checkpointToProto(later), publicKey: key.publicKey });
    expect(again).toMatchObject({ status: CheckpointSignStatus.UNCHANGED, checkpoint: { atMs: BigInt(signed.atMs) } });
    const { rows } = await fx.rt.pool.query("SELECT private_key FROM checkpoint_keys WHERE kid = $1", [key.kid]);
    expect(rows).toEqual([{ private_key: null }]);

    // A chain edited since the last checkpoint is refused, as Sign refuses it.
    await appendRows(fx.rt.pool, "acme", 2);
    await fx.rt.pool.query("UPDATE audit_log SET cost = 99 WHERE org_id = 'acme' AND seq = 8");
    const next = await admin.head({ orgId: "acme", publicKey: key.publicKey });
    const refused = await admin.store({ checkpoint: checkpointToProto(signCheckpoint({ orgId: "acme", seq: Number(next.seq), hash: next.hash, atMs: Date.now() }, key)), publicKey: key.publicKey });
    expect(refused).toMatchObject({ status: CheckpointSignStatus.REFUSED, broken: { seq: 8n } });
  });
});

import { generateKeyPairSync } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { createPostgresAuditStore } from "../../src/store/audit/postgres-audit-store.js";
import { runCheckpointOnce } from "../../src/governance/checkpoint-job.js";
import { activeSigningKey, checkpointKeyId, listCheckpointKeys, parseOperatorKey, rotateCheckpointKey } from "../../src/governance/checkpoint-keys.js";
import { verifyChainWithCheckpoints } from "../../src/governance/checkpoint-verify.js";
import { checkpointPayload, exportCheckpoints, listCheckpoints, parseCheckpointLines, signHead } from "../../src/governance/checkpoints.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { appendRows } from "./chain.js";
import { createPostgresStores } from "../../src/store/postgres-stores.js";

/** The storage ports the checkpoint signer and verifier take (runtime.stores in a process). */
const stores = createPostgresStores();

const NOW = 1_700_000_100_000;

let db: TestDatabase;
beforeEach(async () => {
  db = await createTestDatabase();
});
afterEach(async () => {
  await db.drop();
});

async function signNow(orgId: string, now = NOW) {
  const key = await activeSigningKey(stores, db.pool);
  const outcome = await signHead(stores, db.pool, orgId, { key, now, wait: true });
  if (outcome.status !== "signed") throw new Error(`expected a signature, got ${JSON.stringify(outcome)}`);
  return outcome.checkpoint;
}

describe("signing and verifying checkpoints", () => {
  it("signs chain heads that then verify with the chain, and exports them with their public key", async () => {
    await appendRows(db.pool, "acme", 10);
    const first = await signNow("acme");
    await appendRows(db.pool, "acme", 7);
    const second = await signNow("acme", NOW + 1);
    expect([first.seq, second.seq]).toEqual([10, 17]);
    expect(first.kid).toMatch(/^ck_[0-9a-f]{16}$/);

    const stored = await listCheckpoints(stores, db.pool, "acme");
    expect(stored).toEqual([first, second]);
    const head = await db.pool.query("SELECT hash FROM audit_heads WHERE org_id = 'acme'");
    expect(second.hash).toBe(head.rows[0].hash);

    const result = await verifyChainWithCheckpoints(stores, db.pool, "acme");
    expect(result).toEqual({ ok: true, rows: 17, headSeq: 17, checkpoints: { table: 2, signedSeq: 17 } });

    const lines = parseCheckpointLines(await exportCheckpoints(stores, db.pool, "acme"));
    expect(lines.map((l) => [l.orgId, l.seq, l.kid])).toEqual([["acme", 10, first.kid], ["acme", 17, first.kid]]);
    expect(checkpointKeyId(lines[0]!.publicKey)).toBe(first.kid);
    const withFile = await verifyChainWithCheckpoints(stores, db.pool, "acme", { checkpoints: lines });
    expect(withFile).toMatchObject({ ok: true, checkpoints: { table: 2, file: 2, signedSeq: 17 } });
    expect(checkpointPayload(first)).toBe(`{"v":1,"org_id":"acme","seq":10,"hash":"${first.hash}","at_ms":${NOW}}`);
  });

  it("signing an already signed head changes nothing, and an empty chain has nothing to sign", async () => {
    const key = await activeSigningKey(stores, db.pool);
    expect(await signHead(stores, db.pool, "nobody", { key, now: NOW })).toEqual({ status: "unchanged" });
    await appendRows(db.pool, "acme", 3);
    const signed = await signHead(stores, db.pool, "acme", { key, now: NOW });
    const again = await signHead(stores, db.pool, "acme", { key, now: NOW + 5 });
    expect(signed.status).toBe("signed");
    expect(again).toEqual({ status: "unchanged", checkpoint: (signed as { checkpoint: unknown }).checkpoint });
    expect(await listCheckpoints(stores, db.pool, "acme")).toHaveLength(1);
  });

  it("names the tampered row when one row is edited, with or without checkpoints around it", async () => {
    await appendRows(db.pool, "acme", 12);
    await signNow("acme");
    const file = parseCheckpointLines(await exportCheckpoints(stores, db.pool));
    await db.pool.query("UPDATE audit_log SET reason = 'nothing happened' WHERE org_id = 'acme' AND seq = 6");
    for (const options of [{}, { checkpoints: file }]) {
      const result = await verifyChainWithCheckpoints(stores, db.pool, "acme", options);
      expect(result).toMatchObject({ ok: false, firstBroken: { seq: 6, reason: expect.stringMatching(/contents do not match its hash/) } });
    }
  });

  it("refuses to sign a head whose rows since the last checkpoint do not verify", async () => {
    await appendRows(db.pool, "acme", 5);
    await signNow("acme");
    await appendRows(db.pool, "acme", 5);
    await db.pool.query("UPDATE audit_log SET cost = 99 WHERE org_id = 'acme' AND seq = 8");
    const key = await activeSigningKey(stores, db.pool);
    const outcome = await signHead(stores, db.pool, "acme", { key, now: NOW });
    expect(outcome).toMatchObject({ status: "refused", broken: { seq: 8 } });
    expect((await listCheckpoints(stores, db.pool, "acme")).map((c) => c.seq)).toEqual([5]);
  });

  it("reports a checkpoint whose signature was forged, in the table or in a file", async () => {
    await appendRows(db.pool, "acme", 8);
    const checkpoint = await signNow("acme");
    const text = await exportCheckpoints(stores, db.pool, "acme");

    // A file line whose hash was changed keeps its old signature: it no longer verifies.
    const line = JSON.parse(text);
    const forged = JSON.stringify({ ...line, hash: "ab".repeat(32) });
    const fromFile = await verifyChainWithCheckpoints(stores, db.pool, "acme", { checkpoints: parseCheckpointLines(forged), source: "saved.jsonl" });
    expect(fromFile).toMatchObject({ ok: false, firstBroken: { seq: 8 } });
    expect(fromFile.firstBroken!.reason).toMatch(/saved\.jsonl line 1 .*signature does not verify with the public key in the file/);

    // A signature made with another key, with the other key's public key: the kid no longer belongs to the key.
    const other = generateKeyPairSync("ed25519");
    const swapped = { ...line, public_key: other.publicKey.export({ type: "spki", format: "pem" }).toString() };
    const swappedResult = await verifyChainWithCheckpoints(stores, db.pool, "acme", { checkpoints: parseCheckpointLines(JSON.stringify(swapped)) });
    expect(swappedResult.firstBroken).toMatchObject({ seq: 8, reason: expect.stringMatching(/kid does not belong to its public_key/) });

    // In the table: a signature that is not the key's.
    const bad = Buffer.from(checkpoint.signature, "base64");
    bad[0] = bad[0]! ^ 0xff;
    await db.pool.query("UPDATE audit_checkpoints SET signature = $1 WHERE org_id = 'acme' AND seq = 8", [bad.toString("base64")]);
    const fromTable = await verifyChainWithCheckpoints(stores, db.pool, "acme");
    expect(fromTable).toMatchObject({ ok: false, firstBroken: { seq: 8, reason: expect.stringMatching(/signature does not verify with key ck_/) } });
    // The chain on its own is fine: only the checkpoint is wrong.
    expect((await verifyChain(createPostgresAuditStore(), db.pool, "acme")).ok).toBe(true);
  });

  it("reports checkpoints beyond the end of a chain whose tail was cut off consistently", async () => {
    await appendRows(db.pool, "acme", 10);
    await signNow("acme");
    const file = parseCheckpointLines(await exportCheckpoints(stores, db.pool, "acme"));
    const row7 = await db.pool.query("SELECT hash FROM audit_log WHERE org_id = 'acme' AND seq = 7");
    await db.pool.query("DELETE FROM audit_checkpoints WHERE org_id = 'acme'");
    await db.pool.query("DELETE FROM audit_log WHERE org_id = 'acme' AND seq > 7");
    await db.pool.query("UPDATE audit_heads SET seq = 7, hash = $1 WHERE org_id = 'acme'", [row7.rows[0].hash]);
    expect((await verifyChainWithCheckpoints(stores, db.pool, "acme")).ok).toBe(true);
    const result = await verifyChainWithCheckpoints(stores, db.pool, "acme", { checkpoints: file });
    expect(result).toMatchObject({ ok: false, headSeq: 7, firstBroken: { seq: 8, reason: expect.stringMatching(/covers seq 10: rows 8\.\.10 were removed/) } });
  });

  it("rotates keys: old checkpoints keep verifying under their retired key, new ones use the new key", async () => {
    await appendRows(db.pool, "acme", 4);
    const before = await signNow("acme");
    const newKid = await rotateCheckpointKey(stores, db.pool);
    expect(newKid).not.toBe(before.kid);
    await appendRows(db.pool, "acme", 4);
    const after = await signNow("acme");
    expect(after.kid).toBe(newKid);

    const keys = await listCheckpointKeys(stores, db.pool);
    expect(keys.map((k) => [k.kid, k.retiredAt === null, k.hasPrivateKey])).toEqual([
      [newKid, true, true],
      [before.kid, false, false],
    ]);
    expect(await verifyChainWithCheckpoints(stores, db.pool, "acme")).toMatchObject({ ok: true, checkpoints: { table: 2, signedSeq: 8 } });
    const file = parseCheckpointLines(await exportCheckpoints(stores, db.pool));
    expect(file.map((c) => c.kid)).toEqual([before.kid, newKid]);
    expect(await verifyChainWithCheckpoints(stores, db.pool, "acme", { checkpoints: file })).toMatchObject({ ok: true, checkpoints: { file: 2 } });
  });

  it("signs with an operator-supplied key whose private half never reaches the database", async () => {
    const pair = generateKeyPairSync("ed25519");
    const operatorKey = parseOperatorKey(pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString());
    await appendRows(db.pool, "acme", 3);
    expect(await runCheckpointOnce({ stores, pool: db.pool, now: NOW, everyRows: 1, operatorKey })).toBe(1);
    const [checkpoint] = await listCheckpoints(stores, db.pool, "acme");
    expect(checkpoint!.kid).toBe(operatorKey.kid);
    const keys = await listCheckpointKeys(stores, db.pool);
    expect(keys).toEqual([expect.objectContaining({ kid: operatorKey.kid, hasPrivateKey: false, retiredAt: null })]);
    expect((await verifyChainWithCheckpoints(stores, db.pool, "acme")).ok).toBe(true);
    expect(() => parseOperatorKey("not a key")).toThrow(/PKCS#8/);
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    expect(() => parseOperatorKey(rsa)).toThrow(/must be an Ed25519 private key/);
  });
});

describe("runCheckpointOnce", () => {
  it("signs a tenant once enough rows are unsigned or the oldest unsigned row is old enough", async () => {
    await appendRows(db.pool, "big", 12);
    await appendRows(db.pool, "small", 3);
    const oldestSmall = 1_700_000_000_001; // entry(…, 1).atMs
    const options = { stores, pool: db.pool, everyRows: 10, everyMs: 60_000 };

    expect(await runCheckpointOnce({ ...options, now: oldestSmall + 1_000 })).toBe(1);
    expect((await listCheckpoints(stores, db.pool, "big")).map((c) => c.seq)).toEqual([12]);
    expect(await listCheckpoints(stores, db.pool, "small")).toEqual([]);

    // Nothing new for big; small's oldest unsigned row is now a minute old.
    expect(await runCheckpointOnce({ ...options, now: oldestSmall + 60_000 })).toBe(1);
    expect((await listCheckpoints(stores, db.pool, "small")).map((c) => c.seq)).toEqual([3]);
    expect(await runCheckpointOnce({ ...options, now: oldestSmall + 120_000 })).toBe(0);

    // Rows after a checkpoint are measured from the first unsigned one.
    await appendRows(db.pool, "small", 2); // seq 4, 5: at_ms of entry 4 and 5
    expect(await runCheckpointOnce({ ...options, now: 1_700_000_000_004 + 59_000 })).toBe(0);
    expect(await runCheckpointOnce({ ...options, now: 1_700_000_000_004 + 60_000 })).toBe(1);
    expect((await listCheckpoints(stores, db.pool, "small")).map((c) => c.seq)).toEqual([3, 5]);
    expect((await verifyChainWithCheckpoints(stores, db.pool, "small")).ok).toBe(true);
  });

  it("leaves a tenant unsigned whose chain does not verify, and keeps signing the others", async () => {
    await appendRows(db.pool, "broken", 4);
    await appendRows(db.pool, "fine", 4);
    await db.pool.query("UPDATE audit_log SET verdict = 'deny' WHERE org_id = 'broken' AND seq = 2");
    expect(await runCheckpointOnce({ stores, pool: db.pool, now: NOW, everyRows: 1 })).toBe(1);
    expect(await listCheckpoints(stores, db.pool, "broken")).toEqual([]);
    expect(await listCheckpoints(stores, db.pool, "fine")).toHaveLength(1);
  });
});

/**
 * The attack checkpoints exist for: someone with write access to the database rewrites a tenant's whole audit
 * table consistently — every hash recomputed, the head moved, even the checkpoints deleted and re-signed with a
 * fresh key of their own. The chain verifies on its own; the checkpoints exported before the rewrite do not.
 */
import { generateKeyPairSync } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { createPostgresAuditStore } from "../../src/store/audit/postgres-audit-store.js";
import { runCheckpointOnce } from "../../src/governance/checkpoint-job.js";
import { listCheckpointKeys } from "../../src/governance/checkpoint-keys.js";
import { verifyChainWithCheckpoints } from "../../src/governance/checkpoint-verify.js";
import { exportCheckpoints, listCheckpoints, parseCheckpointLines } from "../../src/governance/checkpoints.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { appendRows, editReason, rewriteChain } from "./chain.js";
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

/** A 30-row chain for acme with checkpoints at seq 10, 20 and 30, and one for globex; returns the export. */
async function signedChains(): Promise<string> {
  for (const seq of [10, 20, 30]) {
    await appendRows(db.pool, "acme", 10);
    expect(await runCheckpointOnce({ stores, pool: db.pool, now: NOW + seq, everyRows: 10 })).toBe(1);
  }
  await appendRows(db.pool, "globex", 5);
  await runCheckpointOnce({ stores, pool: db.pool, now: NOW, everyRows: 1 });
  return exportCheckpoints(stores, db.pool);
}

describe("a consistent rewrite of the whole audit table", () => {
  it("passes plain verification but not against the checkpoints exported before it", async () => {
    const exported = await signedChains();
    const file = parseCheckpointLines(exported);
    expect(file.map((c) => `${c.orgId}:${c.seq}`)).toEqual(["acme:10", "acme:20", "acme:30", "globex:5"]);
    const originalKid = file[0]!.kid;

    // The rewrite: row 14's reason is changed and every hash from the genesis recomputed.
    await rewriteChain(db.pool, "acme", editReason(14, "approved by the CFO"));
    // …the old checkpoints are removed and the key table is replaced with the attacker's own key, which re-signs.
    await db.pool.query("DELETE FROM audit_checkpoints");
    await db.pool.query("DELETE FROM checkpoint_keys");
    expect(await runCheckpointOnce({ stores, pool: db.pool, now: NOW + 100, everyRows: 1 })).toBe(2);
    const resigned = await listCheckpoints(stores, db.pool, "acme");
    expect(resigned.map((c) => c.seq)).toEqual([30]);
    expect(resigned[0]!.kid).not.toBe(originalKid);
    expect((await listCheckpointKeys(stores, db.pool)).map((k) => k.kid)).not.toContain(originalKid);

    // That is the point: on its own the rewritten chain, and its re-signed checkpoints, verify.
    expect(await verifyChain(createPostgresAuditStore(), db.pool, "acme")).toEqual({ ok: true, rows: 30, headSeq: 30 });
    expect(await verifyChainWithCheckpoints(stores, db.pool, "acme")).toMatchObject({ ok: true, checkpoints: { table: 1, signedSeq: 30 } });

    // Against the exported copy it does not: seq 10 still matches, seq 20 is the first signed head that differs.
    const result = await verifyChainWithCheckpoints(stores, db.pool, "acme", { checkpoints: file, source: "acme.jsonl" });
    expect(result.ok).toBe(false);
    expect(result.firstBroken!.seq).toBe(20);
    expect(result.firstBroken!.reason).toMatch(/acme\.jsonl line 2 \(checkpoint at seq 20, key ck_[0-9a-f]{16}, signed [0-9T:.-]+Z\)/);
    expect(result.firstBroken!.reason).toMatch(/rewritten after it was signed \(the change lies in rows 11\.\.20\)/);
    expect(result.checkpoints).toEqual({ table: 1, file: 3, signedSeq: 0 });

    // The untouched tenant still verifies against the same file.
    expect(await verifyChainWithCheckpoints(stores, db.pool, "globex", { checkpoints: file })).toMatchObject({ ok: true, checkpoints: { file: 1 } });
  });

  it("is caught by the stored checkpoints alone when the attacker leaves them in place", async () => {
    await signedChains();
    await rewriteChain(db.pool, "acme", editReason(25, "nothing to see"));
    expect((await verifyChain(createPostgresAuditStore(), db.pool, "acme")).ok).toBe(true);
    const result = await verifyChainWithCheckpoints(stores, db.pool, "acme");
    expect(result).toMatchObject({ ok: false, firstBroken: { seq: 30, reason: expect.stringMatching(/the change lies in rows 21\.\.30/) } });
    // …and the signer refuses to sign on top of it.
    await appendRows(db.pool, "acme", 1);
    expect(await runCheckpointOnce({ stores, pool: db.pool, now: NOW + 200, everyRows: 1 })).toBe(0);
  });

  it("is caught when the attacker re-signs under the original kid with another key", async () => {
    const file = parseCheckpointLines(await signedChains());
    await rewriteChain(db.pool, "acme", editReason(3, "edited"));
    await db.pool.query("DELETE FROM audit_checkpoints");
    // Keeps the kid, swaps in a new key pair: the table's key no longer matches the kid it is filed under.
    const pair = generateKeyPairSync("ed25519");
    await db.pool.query("UPDATE checkpoint_keys SET public_key = $1, private_key = $2", [
      pair.publicKey.export({ type: "spki", format: "pem" }).toString(),
      pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    ]);
    await runCheckpointOnce({ stores, pool: db.pool, now: NOW + 300, everyRows: 1 });
    const plain = await verifyChainWithCheckpoints(stores, db.pool, "acme");
    expect(plain).toMatchObject({ ok: false, firstBroken: { seq: 30, reason: expect.stringMatching(/checkpoint_keys holds a public key under kid .* that is not that key/) } });
    const withFile = await verifyChainWithCheckpoints(stores, db.pool, "acme", { checkpoints: file });
    expect(withFile).toMatchObject({ ok: false, firstBroken: { seq: 10 } });
  });
});

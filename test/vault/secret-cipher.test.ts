/**
 * The vault cipher: round trip, AAD binding (an envelope only opens for the row it was sealed for, so a ciphertext
 * copied into another row or another tenant's row is useless), key rotation, and a wrong or absent key.
 */
import { createPostgresStores } from "../../src/store/postgres-stores.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { withTransaction } from "../../src/store/db.js";
import { createTenant } from "../../src/tenancy/tenants.js";
import { openConnectionSecret } from "../../src/vault/connection-secret.js";
import { addConnection } from "../../src/vault/connection-store.js";
import { createSecretCipher, ENCRYPTION_KEY_VARIABLE, parseEncryptionKeys, requireCipher } from "../../src/vault/secret-cipher.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { cipherOf, keyItem, uniqueSecret } from "./helpers.js";

const stores = createPostgresStores();

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return error instanceof SwitchyardError ? error.code : "not a SwitchyardError";
  }
  return undefined;
}

describe("secret cipher", () => {
  it("round-trips, with a fresh IV each time and nothing of the plain text in the envelope", () => {
    const cipher = cipherOf(keyItem("k1"));
    const secret = uniqueSecret();
    const a = cipher.seal(secret, "connection:1");
    const b = cipher.seal(secret, "connection:1");
    expect(a).not.toBe(b);
    expect(a).toMatch(/^v1\.k1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(a).not.toContain(secret);
    expect(Buffer.from(a.split(".")[3]!, "base64url").toString("latin1")).not.toContain(secret);
    expect(cipher.open(a, "connection:1")).toBe(secret);
    expect(cipher.open(b, "connection:1")).toBe(secret);
    expect(cipher.keyIdOf(a)).toBe("k1");
  });

  it("binds an envelope to its row: another AAD (row, kind of row) does not open it", () => {
    const cipher = cipherOf(keyItem("k1"));
    const sealed = cipher.seal("s3cret-token", "connection:aaaa");
    for (const aad of ["connection:bbbb", "ingest:aaaa", "", "connection:aaaa "]) {
      let error: unknown;
      try {
        cipher.open(sealed, aad);
      } catch (e) {
        error = e;
      }
      expect(error, aad).toBeInstanceOf(SwitchyardError);
      expect((error as SwitchyardError).code).toBe(ErrorCode.FailedPrecondition);
      expect((error as SwitchyardError).message).not.toContain("s3cret-token");
    }
  });

  it("refuses a tampered envelope", () => {
    const cipher = cipherOf(keyItem("k1"));
    const [v, id, iv, body] = cipher.seal("s3cret", "x").split(".");
    const bytes = Buffer.from(body!, "base64url");
    bytes[0] = bytes[0]! ^ 1;
    expect(codeOf(() => cipher.open([v, id, iv, bytes.toString("base64url")].join("."), "x"))).toBe(ErrorCode.FailedPrecondition);
    expect(codeOf(() => cipher.open("not an envelope", "x"))).toBe(ErrorCode.FailedPrecondition);
  });

  it("opens with any key of the ring, seals with the first; a key left out or replaced cannot open", () => {
    const k1 = keyItem("k1");
    const k2 = keyItem("k2");
    const old = cipherOf(k1);
    const sealed = old.seal("s3cret", "connection:x");
    const rotated = cipherOf(`${k2},${k1}`);
    expect(rotated.currentKeyId).toBe("k2");
    expect(rotated.open(sealed, "connection:x")).toBe("s3cret");
    expect(rotated.keyIdOf(rotated.seal("s3cret", "connection:x"))).toBe("k2");
    // The old key gone: a clear message naming the key id and the variable.
    expect(() => cipherOf(k2).open(sealed, "connection:x")).toThrow(new RegExp(`sealed with key "k1", which ${ENCRYPTION_KEY_VARIABLE} no longer holds`));
    // Same id, other material: authentication fails.
    expect(codeOf(() => cipherOf(keyItem("k1")).open(sealed, "connection:x"))).toBe(ErrorCode.FailedPrecondition);
  });

  it("keys its fingerprints: stable per key, different under another key, never the secret", () => {
    const k1 = keyItem("k1");
    const a = cipherOf(k1);
    expect(a.fingerprint("s3cret")).toMatch(/^fp_[0-9a-f]{16}$/);
    expect(a.fingerprint("s3cret")).toBe(cipherOf(k1).fingerprint("s3cret"));
    expect(a.fingerprint("s3cret")).not.toBe(a.fingerprint("s3cret2"));
    expect(a.fingerprint("s3cret")).not.toBe(cipherOf(keyItem("k1")).fingerprint("s3cret"));
  });

  it("has no cipher without a key, and requireCipher refuses naming the variable", () => {
    expect(createSecretCipher([])).toBeUndefined();
    expect(createSecretCipher(parseEncryptionKeys(""))).toBeUndefined();
    let error: unknown;
    try {
      requireCipher(undefined, "adding a connection");
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SwitchyardError);
    expect((error as SwitchyardError).code).toBe(ErrorCode.FailedPrecondition);
    expect((error as SwitchyardError).message).toContain(ENCRYPTION_KEY_VARIABLE);
    expect((error as SwitchyardError).details).toMatchObject({ reason: "NO_ENCRYPTION_KEY", variable: ENCRYPTION_KEY_VARIABLE });
    expect(() => parseEncryptionKeys("k1:c2hvcnQ=")).toThrow(/32 bytes/);
  });
});

describe("secret cipher on stored connections", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await createTenant(stores.tenants, db.pool, { orgId: "acme", name: "Acme" });
    await createTenant(stores.tenants, db.pool, { orgId: "globex", name: "Globex" });
  });
  afterAll(async () => {
    await db.drop();
  });

  it("a ciphertext copied into another row (another tenant's) does not open there", async () => {
    const cipher = cipherOf(keyItem("k1"));
    const secretA = uniqueSecret();
    const a = await withTransaction(db.pool, (c) => addConnection(stores, c, cipher, "acme", { kind: "github", accountKey: "github.com", secret: secretA }, { actor: "test" }));
    const b = await withTransaction(db.pool, (c) => addConnection(stores, c, cipher, "globex", { kind: "github", accountKey: "github.com", secret: uniqueSecret() }, { actor: "test" }));
    expect(await openConnectionSecret(stores.connections, db.pool, cipher, "acme", a.id)).toBe(secretA);
    // The stored form is an envelope, never the secret.
    const stored = await db.pool.query("SELECT secret_ciphertext FROM connections WHERE id = $1", [a.id]);
    expect(stored.rows[0].secret_ciphertext).toMatch(/^v1\.k1\./);
    expect(JSON.stringify(stored.rows)).not.toContain(secretA);
    // Globex's row gets Acme's envelope: it does not open as Globex's secret.
    await db.pool.query("UPDATE connections SET secret_ciphertext = $1 WHERE id = $2", [stored.rows[0].secret_ciphertext, b.id]);
    await expect(openConnectionSecret(stores.connections, db.pool, cipher, "globex", b.id)).rejects.toMatchObject({ code: ErrorCode.FailedPrecondition });
    // And a tenant cannot open another tenant's connection by id at all.
    await expect(openConnectionSecret(stores.connections, db.pool, cipher, "globex", a.id)).rejects.toMatchObject({ code: ErrorCode.NotFound });
    // A wrong key cannot open it either.
    await expect(openConnectionSecret(stores.connections, db.pool, cipherOf(keyItem("k9")), "acme", a.id)).rejects.toMatchObject({ code: ErrorCode.FailedPrecondition });
  });
});

/**
 * Encryption at rest for tenant secrets (connection credentials, ingest verification secrets): AES-256-GCM with a
 * key ring from SWITCHYARD_SECRET_ENCRYPTION_KEY. The stored form is an envelope naming the key that sealed it, so the
 * operator can rotate: put a new key first, keep the old ones after it until every envelope was re-sealed.
 *
 * Each envelope is bound to the row it belongs to by additional authenticated data (`aad`, e.g. `connection:<id>`):
 * a ciphertext copied into another row (another tenant's) does not decrypt there.
 *
 * With no key configured there is no cipher at all: `requireCipher` refuses, so nothing is ever stored in clear.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";
import { ErrorCode, SwitchyardError } from "../errors.js";

export interface EncryptionKey {
  /** Short id stored in every envelope it seals (letters, digits, `_`, `-`). */
  id: string;
  /** 32 bytes. */
  key: Buffer;
}

export interface SecretCipher {
  /** Seals `plain` with the current key; `aad` binds the envelope to its row. */
  seal(plain: string, aad: string): string;
  /** Opens an envelope sealed by any key of the ring; throws FAILED_PRECONDITION when it cannot. */
  open(envelope: string, aad: string): string;
  /** A stable, non-reversible label of a secret for listings (`fp_` + 16 hex), keyed so it cannot be brute-forced offline. */
  fingerprint(plain: string): string;
  /** The key id new envelopes are sealed with. */
  readonly currentKeyId: string;
  /** The key id an envelope was sealed with (for re-sealing after a rotation). */
  keyIdOf(envelope: string): string;
}

export const ENCRYPTION_KEY_VARIABLE = "SWITCHYARD_SECRET_ENCRYPTION_KEY";
const VERSION = "v1";
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;

/**
 * Parses the key ring: `ID:BASE64,ID:BASE64` (the first seals, all open) or one bare base64 key (id `k1`). Each key
 * must decode to exactly 32 bytes (`openssl rand -base64 32`).
 */
export function parseEncryptionKeys(raw: string): EncryptionKey[] {
  const items = raw.split(",").map((item) => item.trim()).filter(Boolean);
  const keys = items.map((item, index): EncryptionKey => {
    const colon = item.indexOf(":");
    const [id, material] = colon === -1 ? ["k1", item] : [item.slice(0, colon), item.slice(colon + 1)];
    const where = `${ENCRYPTION_KEY_VARIABLE} item ${index + 1}`;
    if (!KEY_ID.test(id)) throw configError(`${where}: key id ${JSON.stringify(id)} must be 1 to 32 letters, digits, _ or -`);
    const key = Buffer.from(material, "base64");
    if (key.byteLength !== 32 || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(material)) {
      throw configError(`${where} (id ${id}): the key must be 32 bytes in base64, e.g. from \`openssl rand -base64 32\``);
    }
    return { id, key };
  });
  const ids = new Set(keys.map((k) => k.id));
  if (ids.size !== keys.length) throw configError(`${ENCRYPTION_KEY_VARIABLE}: key ids must be unique`);
  return keys;
}

/** The cipher for a key ring; undefined when the ring is empty (no key configured). */
export function createSecretCipher(keys: readonly EncryptionKey[]): SecretCipher | undefined {
  if (keys.length === 0) return undefined;
  const current = keys[0]!;
  const byId = new Map(keys.map((k) => [k.id, k.key]));
  // A separate key for fingerprints, derived so that a fingerprint reveals nothing about the sealing key.
  const fingerprintKey = createHmac("sha256", current.key).update("switchyard:fingerprint").digest();
  return {
    currentKeyId: current.id,
    seal(plain, aad) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", current.key, iv);
      cipher.setAAD(Buffer.from(aad));
      const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final(), cipher.getAuthTag()]);
      return [VERSION, current.id, iv.toString("base64url"), body.toString("base64url")].join(".");
    },
    open(envelope, aad) {
      const [version, id, iv, body] = envelope.split(".");
      const key = id === undefined ? undefined : byId.get(id);
      if (version !== VERSION || !key || !iv || !body) {
        throw new SwitchyardError(
          ErrorCode.FailedPrecondition,
          key || version !== VERSION ? "a stored secret is not a sealed envelope" : `a stored secret was sealed with key ${JSON.stringify(id)}, which ${ENCRYPTION_KEY_VARIABLE} no longer holds`,
          { details: { reason: "SECRET_UNREADABLE", keyId: id ?? "" } },
        );
      }
      try {
        const bytes = Buffer.from(body, "base64url");
        const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
        decipher.setAAD(Buffer.from(aad));
        decipher.setAuthTag(bytes.subarray(bytes.byteLength - 16));
        return Buffer.concat([decipher.update(bytes.subarray(0, bytes.byteLength - 16)), decipher.final()]).toString("utf8");
      } catch {
        // Wrong key material under the same id, a tampered envelope or one copied from another row.
        throw new SwitchyardError(ErrorCode.FailedPrecondition, "a stored secret failed authentication (tampered, or moved from another row)", {
          details: { reason: "SECRET_UNREADABLE", keyId: id },
        });
      }
    },
    fingerprint(plain) {
      return `fp_${createHmac("sha256", fingerprintKey).update(plain).digest("hex").slice(0, 16)}`;
    },
    keyIdOf(envelope) {
      return envelope.split(".")[1] ?? "";
    },
  };
}

/** The cipher, or a FAILED_PRECONDITION saying how to configure one: nothing is ever stored without it. */
export function requireCipher(cipher: SecretCipher | undefined, what: string): SecretCipher {
  if (cipher) return cipher;
  throw new SwitchyardError(ErrorCode.FailedPrecondition, `${what} is refused: no encryption key is configured, so the secret could not be stored encrypted; set ${ENCRYPTION_KEY_VARIABLE} (32 bytes, base64: \`openssl rand -base64 32\`)`, {
    details: { reason: "NO_ENCRYPTION_KEY", variable: ENCRYPTION_KEY_VARIABLE },
  });
}

function configError(message: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.Config, message, { details: { variable: ENCRYPTION_KEY_VARIABLE } });
}

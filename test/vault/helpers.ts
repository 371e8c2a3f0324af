/** Key rings and secrets for the vault tests. */
import { randomBytes } from "node:crypto";
import { createSecretCipher, parseEncryptionKeys, type SecretCipher } from "../../src/vault/secret-cipher.js";

/** A fresh 32-byte key in the form SWITCHYARD_SECRET_ENCRYPTION_KEY takes (`ID:BASE64`). */
export function keyItem(id: string): string {
  return `${id}:${randomBytes(32).toString("base64")}`;
}

export function cipherOf(ring: string): SecretCipher {
  return createSecretCipher(parseEncryptionKeys(ring))!;
}

/** A token-shaped secret unique to the test, so a grep for it can only find a leak. */
export function uniqueSecret(prefix = "ghp_"): string {
  return `${prefix}${randomBytes(18).toString("hex")}`;
}

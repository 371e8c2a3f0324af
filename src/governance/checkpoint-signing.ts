/**
 * What a signed audit checkpoint is, byte for byte, and the Ed25519 keys that sign it — pure (node:crypto only), so
 * a signer that holds its own key (the CLI's `audit checkpoint --key-file`) signs where it runs and only the
 * signature travels (cli/remote/checkpoint-client.ts), while the coordinators' signer (checkpoints.ts) signs the
 * same bytes with the database-held key.
 *
 * The signed bytes are the canonical JSON text, keys in this order, no spaces:
 * `{"v":1,"org_id":"acme","seq":42,"hash":"<64 hex>","at_ms":1714557600000}`; the signature is Ed25519 over
 * those UTF-8 bytes, base64. `at_ms` is when the head was signed.
 *
 * A key id (`kid`) is derived from the public key (`ck_` + the first 16 hex digits of the SHA-256 of its SPKI
 * DER), so a kid can never silently name a different key: whoever holds an exported checkpoint can check it.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";
import { ErrorCode, SwitchyardError } from "../errors.js";

const CHECKPOINT_VERSION = 1;
export const CHECKPOINT_HASH_RE = /^[0-9a-f]{64}$/;

export interface CheckpointHead {
  orgId: string;
  seq: number;
  hash: string;
  atMs: number;
}

export interface Checkpoint extends CheckpointHead {
  kid: string;
  /** Ed25519 signature of `checkpointPayload(…)`, base64. */
  signature: string;
}

export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  /** SPKI PEM. */
  publicKey: string;
}

/** The exact bytes that are signed. */
export function checkpointPayload(head: CheckpointHead): string {
  if (!Number.isSafeInteger(head.seq) || head.seq < 1) throw invalid("seq", `must be a whole number >= 1, got ${String(head.seq)}`);
  if (!Number.isSafeInteger(head.atMs) || head.atMs < 0) throw invalid("at_ms", `must be a whole number >= 0, got ${String(head.atMs)}`);
  if (!CHECKPOINT_HASH_RE.test(head.hash)) throw invalid("hash", "must be 64 lowercase hex digits");
  return `{"v":${CHECKPOINT_VERSION},"org_id":${JSON.stringify(head.orgId)},"seq":${head.seq},"hash":${JSON.stringify(head.hash)},"at_ms":${head.atMs}}`;
}

export function signCheckpoint(head: CheckpointHead, key: SigningKey): Checkpoint {
  const signature = sign(null, Buffer.from(checkpointPayload(head), "utf8"), key.privateKey).toString("base64");
  return { orgId: head.orgId, seq: head.seq, hash: head.hash, atMs: head.atMs, kid: key.kid, signature };
}

/** Whether the signature is valid for the checkpoint under `publicKey`. Never throws: a bad key or signature is false. */
export function checkpointSignatureValid(checkpoint: Checkpoint, publicKey: KeyObject | string): boolean {
  try {
    const key = typeof publicKey === "string" ? createPublicKey(publicKey) : publicKey;
    if (key.asymmetricKeyType !== "ed25519") return false;
    const signature = Buffer.from(checkpoint.signature, "base64");
    if (signature.toString("base64") !== checkpoint.signature) return false;
    return verify(null, Buffer.from(checkpointPayload(checkpoint), "utf8"), key, signature);
  } catch {
    return false;
  }
}

/** The key id of a public key: `ck_` + 16 hex digits of sha256(SPKI DER). */
export function checkpointKeyId(publicKey: KeyObject | string): string {
  const key = typeof publicKey === "string" ? createPublicKey(publicKey) : publicKey;
  const der = key.export({ type: "spki", format: "der" });
  return `ck_${createHash("sha256").update(der).digest("hex").slice(0, 16)}`;
}

/** Parses a PEM public key, insisting on Ed25519; throws INVALID_ARGUMENT otherwise. */
export function parseCheckpointPublicKey(pem: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (error) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `checkpoint public key does not parse: ${(error as Error).message}`, { cause: error, details: { path: "public_key" } });
  }
  if (key.asymmetricKeyType !== "ed25519") {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `checkpoint keys are Ed25519, got ${String(key.asymmetricKeyType)}`, { details: { path: "public_key" } });
  }
  return key;
}

/**
 * An operator-supplied signing key: an Ed25519 private key as PKCS#8 PEM (or a KeyObject). Throws CONFIG when it
 * is not one, so a bad `SWITCHYARD_CHECKPOINT_KEY` stops the process at start-up.
 */
export function parseOperatorKey(key: string | KeyObject): SigningKey {
  let privateKey: KeyObject;
  try {
    privateKey = typeof key === "string" ? createPrivateKey(key) : key;
  } catch (error) {
    throw new SwitchyardError(ErrorCode.Config, `the checkpoint signing key does not parse as a PKCS#8 PEM private key: ${(error as Error).message}`, { cause: error });
  }
  if (privateKey.type !== "private" || privateKey.asymmetricKeyType !== "ed25519") {
    throw new SwitchyardError(ErrorCode.Config, `the checkpoint signing key must be an Ed25519 private key, got ${privateKey.type} ${String(privateKey.asymmetricKeyType)}`);
  }
  const publicKey = createPublicKey(privateKey);
  return { kid: checkpointKeyId(publicKey), privateKey, publicKey: publicKey.export({ type: "spki", format: "pem" }).toString() };
}

/** A fresh Ed25519 key, with its private half as PKCS#8 PEM (what the key table holds). */
export function generateSigningKey(): SigningKey & { privateKeyPem: string } {
  const pair = generateKeyPairSync("ed25519");
  const publicKey = pair.publicKey.export({ type: "spki", format: "pem" }).toString();
  const privateKeyPem = pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  return { kid: checkpointKeyId(pair.publicKey), privateKey: pair.privateKey, publicKey, privateKeyPem };
}

function invalid(field: string, message: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.InvalidArgument, `checkpoint ${field} ${message}`, { details: { path: field } });
}

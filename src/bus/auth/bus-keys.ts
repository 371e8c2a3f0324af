/**
 * Keys of bus authentication (README, "Bus authentication"). The coordinators hold master secrets, each named by a
 * key id; every publisher identity (`role:NAME`, `team:NAME`, `gateway`) gets its own key derived from a master
 * secret, so a harness holds only the key of its own queue and cannot sign as another.
 *
 *   publisher key = HMAC-SHA256(master secret, "switchyard-bus-key-v1\n" + sender)
 *
 * Rotation: a new master secret under a new key id signs from then on; coordinators keep accepting the old one
 * until it is removed from their list.
 */
import { createHmac, randomBytes } from "node:crypto";
import { ErrorCode, SwitchyardError } from "../../errors.js";

/** The identity under which the gateway (callback route, sweep, sender) publishes FOREIGN results. */
export const GATEWAY_SENDER = "gateway";

const KEY_DERIVATION_PREFIX = "switchyard-bus-key-v1\n";
const KID_RE = /^[A-Za-z0-9_-]{1,32}$/;
const QUEUE_SENDER_RE = /^(role|team):[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
/** Master secrets shorter than this are refused: a guessable secret would make every key guessable. */
export const MIN_SECRET_BYTES = 32;

export interface BusSecret {
  kid: string;
  secret: Buffer;
}

export interface PublisherKey {
  kid: string;
  sender: string;
  key: Buffer;
}

/** `role:NAME`, `team:NAME` or `gateway`. */
export function isSender(text: string): boolean {
  return text === GATEWAY_SENDER || QUEUE_SENDER_RE.test(text);
}

export function derivePublisherKey(secret: BusSecret, sender: string): PublisherKey {
  if (!isSender(sender)) throw configError(`"${sender}" is not a bus publisher identity: expected role:NAME, team:NAME or ${GATEWAY_SENDER}`, "sender");
  const key = createHmac("sha256", secret.secret).update(KEY_DERIVATION_PREFIX + sender).digest();
  return { kid: secret.kid, sender, key };
}

/**
 * `SWITCHYARD_BUS_SECRET`: `KID:SECRET[,KID:SECRET…]`, the first one current (keys handed out are derived from
 * it), the others still accepted. SECRET is text of at least 32 bytes (e.g. `openssl rand -base64 48`).
 */
export function parseBusSecrets(text: string, path = "SWITCHYARD_BUS_SECRET"): BusSecret[] {
  const secrets: BusSecret[] = [];
  for (const part of text.split(",").map((p) => p.trim()).filter(Boolean)) {
    const colon = part.indexOf(":");
    const kid = colon < 0 ? "" : part.slice(0, colon);
    const secret = Buffer.from(colon < 0 ? "" : part.slice(colon + 1), "utf8");
    if (!KID_RE.test(kid)) throw configError(`${path}: each entry must be KID:SECRET with a key id of letters, digits, "_" or "-" (at most 32)`, path);
    if (secret.byteLength < MIN_SECRET_BYTES) throw configError(`${path}: the secret of key id ${kid} is ${secret.byteLength} bytes; at least ${MIN_SECRET_BYTES} are required`, path);
    if (secrets.some((s) => s.kid === kid)) throw configError(`${path}: key id ${kid} appears twice`, path);
    secrets.push({ kid, secret });
  }
  if (secrets.length === 0) throw configError(`${path} is empty`, path);
  return secrets;
}

/** `KID:KEY:SENDER` (KEY base64url), what `switchyard bus key` prints and `SWITCHYARD_BUS_KEY` takes. */
export function formatPublisherKey(key: PublisherKey): string {
  return `${key.kid}:${key.key.toString("base64url")}:${key.sender}`;
}

export function parsePublisherKey(text: string, path = "SWITCHYARD_BUS_KEY"): PublisherKey {
  const [kid = "", encoded = "", ...rest] = text.trim().split(":");
  const sender = rest.join(":");
  const key = Buffer.from(encoded, "base64url");
  if (!KID_RE.test(kid) || key.byteLength !== 32 || !isSender(sender)) {
    throw configError(`${path} must be KID:KEY:SENDER as printed by \`switchyard bus key --sender SENDER\``, path);
  }
  return { kid, sender, key };
}

/** A random secret for single-process development runs (`start all`, the demo, tests); never persisted. */
export function generateDevSecret(): BusSecret {
  return { kid: "dev", secret: randomBytes(MIN_SECRET_BYTES) };
}

function configError(message: string, path: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.Config, message, { details: { path } });
}

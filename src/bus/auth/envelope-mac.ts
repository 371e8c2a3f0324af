/**
 * The MAC on an envelope (proto: `BusAuth`, field 21 of Envelope):
 *
 *   mac = HMAC-SHA256(publisher key, "switchyard-bus-mac-v1\n" + key_id + "\n" + sender + "\n" + E)
 *
 * where E is the serialized envelope without field 21. It is computed over bytes, never over a re-serialization,
 * so a worker in any language can produce it: serialize the envelope without `auth`, MAC those bytes, append the
 * serialized `auth` field. The verifier removes every top-level field-21 record from what it read and MACs the rest.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { createEnvelope, encodeEnvelope, type Envelope } from "../codec.js";
import { envelopeToBinary } from "../envelope-wire.js";
import type { PublisherKey } from "./bus-keys.js";

const MAC_PREFIX = "switchyard-bus-mac-v1\n";
const AUTH_FIELD = 21;

export function computeMac(key: Buffer, kid: string, sender: string, unsigned: Uint8Array): Buffer {
  return createHmac("sha256", key).update(`${MAC_PREFIX}${kid}\n${sender}\n`).update(unsigned).digest();
}

export function macEquals(expected: Buffer, actual: Uint8Array): boolean {
  return expected.byteLength === actual.byteLength && timingSafeEqual(expected, actual);
}

/**
 * Encodes `envelope` (validated, any `auth` it carries dropped) and appends its BusAuth: the bytes to publish.
 */
export function signEnvelope(key: PublisherKey, envelope: Envelope, maxPayloadBytes: number): Uint8Array {
  const unsigned = encodeEnvelope(envelope.auth ? { ...envelope, auth: undefined } : envelope, maxPayloadBytes);
  const mac = computeMac(key.key, key.kid, key.sender, unsigned);
  // An envelope holding nothing but `auth` serializes to exactly the field-21 record.
  const authRecord = envelopeToBinary(createEnvelope({ auth: { keyId: key.kid, sender: key.sender, mac } }));
  const signed = new Uint8Array(unsigned.byteLength + authRecord.byteLength);
  signed.set(unsigned, 0);
  signed.set(authRecord, unsigned.byteLength);
  return signed;
}

/**
 * The bytes without their top-level field-21 records, and how many there were; undefined when the bytes are not
 * plain protobuf fields (groups are refused: no publisher of ours writes them).
 */
export function withoutAuthField(raw: Uint8Array): { unsigned: Uint8Array; authRecords: number } | undefined {
  const kept: Array<[number, number]> = [];
  let pos = 0;
  let authRecords = 0;
  let authStart = -1;
  const varint = (): number | undefined => {
    let value = 0;
    for (let shift = 0; shift < 64; shift += 7) {
      if (pos >= raw.byteLength) return undefined;
      const b = raw[pos++]!;
      if (shift < 53) value += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return value;
    }
    return undefined;
  };
  while (pos < raw.byteLength) {
    const start = pos;
    const tag = varint();
    if (tag === undefined) return undefined;
    const wireType = tag % 8;
    if (wireType === 0) {
      if (varint() === undefined) return undefined;
    } else if (wireType === 1 || wireType === 5) {
      pos += wireType === 1 ? 8 : 4;
    } else if (wireType === 2) {
      const length = varint();
      if (length === undefined) return undefined;
      pos += length;
    } else {
      return undefined;
    }
    if (pos > raw.byteLength) return undefined;
    if (Math.floor(tag / 8) === AUTH_FIELD) {
      authRecords++;
      authStart = start;
    } else kept.push([start, pos]);
  }
  if (authRecords === 0) return { unsigned: raw, authRecords };
  // The usual shape, one record appended last: no copy.
  if (authRecords === 1 && (kept.length === 0 || kept[kept.length - 1]![1] === authStart)) return { unsigned: raw.subarray(0, authStart), authRecords };
  const unsigned = new Uint8Array(kept.reduce((n, [a, b]) => n + b - a, 0));
  let at = 0;
  for (const [a, b] of kept) {
    unsigned.set(raw.subarray(a, b), at);
    at += b - a;
  }
  return { unsigned, authRecords };
}

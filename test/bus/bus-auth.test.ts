/**
 * Bus authentication's keys and MAC, as another language's worker must reproduce them (README, Bus authentication).
 */
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { BusAuth } from "../../src/bus/auth/bus-auth.js";
import { derivePublisherKey, formatPublisherKey, parseBusSecrets, parsePublisherKey } from "../../src/bus/auth/bus-keys.js";
import { withoutAuthField } from "../../src/bus/auth/envelope-mac.js";
import { EndpointKind, EnvelopeKind, ResultStatus, createEnvelope, decodeEnvelope, encodeEnvelope, jsonPayload } from "../../src/bus/codec.js";
import { envelopeToBinary } from "../../src/bus/envelope-wire.js";
import { ErrorCode } from "../../src/errors.js";

const MAX = 1024 * 1024;
const SECRETS = "k2:second-secret-of-at-least-32-bytes!!,k1:0123456789abcdef0123456789abcdef-xyz";

function result(source: { kind: EndpointKind; id: string } = { kind: EndpointKind.ROLE, id: "writer" }) {
  return createEnvelope({
    id: "e-1",
    orgId: "acme",
    taskId: "00000000-0000-4000-8000-000000000001",
    stepId: "a",
    attempt: 1,
    kind: EnvelopeKind.RESULT,
    status: ResultStatus.OK,
    source,
    payload: jsonPayload({ ok: true }),
  });
}

describe("bus keys", () => {
  it("derive one key per identity: HMAC-SHA256(secret, 'switchyard-bus-key-v1\\n' + sender)", () => {
    const [k2, k1] = parseBusSecrets(SECRETS);
    const key = derivePublisherKey(k1!, "role:writer");
    expect(key.key).toEqual(createHmac("sha256", "0123456789abcdef0123456789abcdef-xyz").update("switchyard-bus-key-v1\nrole:writer").digest());
    // Known answer, for implementations elsewhere.
    expect(formatPublisherKey(key)).toBe("k1:A42cXpgmifKRUXOhlZB-7tFAIr38WpsTfiRlA9Og-EE:role:writer");
    expect(derivePublisherKey(k1!, "role:reader").key).not.toEqual(key.key);
    expect(derivePublisherKey(k2!, "role:writer").key).not.toEqual(key.key);
    expect(parsePublisherKey(formatPublisherKey(key))).toEqual(key);
  });

  it("refuse unusable configuration with CONFIG", () => {
    for (const bad of ["", "nokid", "k1:short", "bad kid!:0123456789abcdef0123456789abcdef", "k:0123456789abcdef0123456789abcdef,k:0123456789abcdef0123456789abcdef"]) {
      expect(() => parseBusSecrets(bad), bad).toThrow(expect.objectContaining({ code: ErrorCode.Config }));
    }
    expect(() => parsePublisherKey("k1:tooshort:role:writer")).toThrow(/KID:KEY:SENDER/);
    expect(() => derivePublisherKey(parseBusSecrets(SECRETS)[0]!, "coordinator")).toThrow(/not a bus publisher identity/);
  });
});

describe("envelope MAC", () => {
  const auth = new BusAuth({ secrets: parseBusSecrets(SECRETS), maxPayloadBytes: MAX });
  const verify = (bytes: Uint8Array) => auth.verifier().verify(bytes, decodeEnvelope(bytes, MAX));

  it("is the HMAC of the envelope serialized without field 21, appended as field 21", () => {
    const signed = auth.signer("role:writer").sign(result());
    const unsigned = encodeEnvelope(result(), MAX);
    expect(Buffer.from(signed.subarray(0, unsigned.byteLength))).toEqual(Buffer.from(unsigned));
    const key = derivePublisherKey(parseBusSecrets(SECRETS)[0]!, "role:writer").key;
    const mac = createHmac("sha256", key).update("switchyard-bus-mac-v1\nk2\nrole:writer\n").update(unsigned).digest();
    expect(decodeEnvelope(signed, MAX).auth).toMatchObject({ keyId: "k2", sender: "role:writer", mac: new Uint8Array(mac) });
    expect(verify(signed)).toEqual({ ok: true, sender: { kind: "queue", endpoint: "role:writer" } });
  });

  it("verifies whatever the field order of the publisher's encoder, and under an older key id until it is dropped", () => {
    const signed = auth.signer("role:writer").sign(result());
    const unsigned = encodeEnvelope(result(), MAX);
    const authRecord = signed.subarray(unsigned.byteLength);
    expect(verify(Uint8Array.from([...authRecord, ...unsigned])).ok).toBe(true);
    const old = new BusAuth({ secrets: parseBusSecrets(SECRETS.split(",")[1]!), maxPayloadBytes: MAX }).signer("role:writer").sign(result());
    expect(verify(old).ok).toBe(true);
    const rotated = new BusAuth({ secrets: parseBusSecrets(SECRETS.split(",")[0]!), maxPayloadBytes: MAX });
    expect(rotated.verifier().verify(old, decodeEnvelope(old, MAX))).toMatchObject({ ok: false, reason: "unknown_key" });
  });

  it("refuses a changed byte, a second auth field, another identity's claim and a missing MAC", () => {
    const signed = auth.signer("role:writer").sign(result());
    const flipped = Uint8Array.from(signed);
    flipped.set(Buffer.from("fals"), Buffer.from(signed).indexOf("true")); // {"ok":true} becomes {"ok":false}… almost
    expect(decodeEnvelope(flipped, MAX).payload?.data).toBeDefined();
    expect(verify(flipped)).toMatchObject({ ok: false, reason: "bad_mac" });
    expect(verify(Uint8Array.from([...signed, ...signed.subarray(encodeEnvelope(result(), MAX).byteLength)]))).toMatchObject({ ok: false, reason: "bad_mac" });
    // The MAC of role:writer relabelled as role:reader.
    const e = decodeEnvelope(signed, MAX);
    const relabelled = envelopeToBinary({ ...e, auth: { ...e.auth!, sender: "role:reader" } });
    expect(verify(relabelled)).toMatchObject({ ok: false, reason: "bad_mac" });
    expect(verify(encodeEnvelope(result(), MAX))).toMatchObject({ ok: false, reason: "no_mac" });
    expect(withoutAuthField(Uint8Array.from([0x1b]))).toBeUndefined(); // a group start: refused
  });

  it("knows the gateway only as the voice of a FOREIGN agent, and a worker never as one", () => {
    const foreign = result({ kind: EndpointKind.FOREIGN, id: "checker" });
    const asGateway = auth.signer("gateway").sign(foreign);
    expect(verify(asGateway)).toEqual({ ok: true, sender: { kind: "gateway", agent: "checker" } });
    expect(verify(auth.signer("gateway").sign(result()))).toMatchObject({ ok: false, reason: "source_mismatch" });
    expect(verify(auth.signer("role:writer").sign(foreign))).toMatchObject({ ok: false, reason: "source_mismatch" });
  });

  it("a process without the master secret signs only as the identities it was handed, and cannot verify", () => {
    const harness = new BusAuth({ publisherKeys: [auth.publisherKey("role:writer")], maxPayloadBytes: MAX });
    expect(verify(harness.signer("role:writer").sign(result())).ok).toBe(true);
    expect(() => harness.signer("role:reader")).toThrow(/no bus key to publish as role:reader/);
    expect(() => harness.verifier()).toThrow(/SWITCHYARD_BUS_SECRET is not set/);
  });
});

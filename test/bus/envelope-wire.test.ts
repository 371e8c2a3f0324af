import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeEnvelope, encodeEnvelope } from "../../src/bus/codec.js";
import { envelopeFromBinary, envelopeToBinary, initEnvelope, tryEnvelopeToBinary } from "../../src/bus/envelope-wire.js";
import { ErrorCode } from "../../src/errors.js";
import { EnvelopeSchema, type EndpointKind, type Envelope, type EnvelopeKind } from "../../src/gen/switchyard/bus/v1/envelope_pb.js";

type Init = Parameters<typeof initEnvelope>[0];
const RUNS = { numRuns: 600 };
/** Hundreds of random envelopes through both codecs are CPU-bound: on a loaded shared box they need more than the default. */
const PROPERTY_TIMEOUT_MS = 180_000;

// ---- generators --------------------------------------------------------------------------------------

const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)); // lone surrogates too
const text = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: "grapheme-ascii", maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 50 }) }, // astral code points
  { weight: 2, arbitrary: fc.string({ unit: codeUnit, maxLength: 50 }) },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom("a", "é", "€", "😀", "\ud800", "\udfff", "\ufeff"), minLength: 30, maxLength: 200 }) },
  { weight: 1, arbitrary: fc.constantFrom("", "\ufeffbom", "\ud83d", "x\udc00", "\ud83d\ude00") },
);
const uint32 = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 0xffffffff }));
const enumValue = fc.oneof(fc.integer({ min: 0, max: 6 }), fc.integer({ min: -0x80000000, max: 0x7fffffff }), fc.constant(-1));
const int64 = fc.oneof(fc.constant(0n), fc.bigInt(0n, 2n ** 45n), fc.bigInt(-(2n ** 63n), 2n ** 63n - 1n), fc.constantFrom(-1n, -(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n));
const uint64 = fc.oneof(fc.constant(0n), fc.bigInt(0n, 100_000n), fc.bigInt(0n, 2n ** 64n - 1n), fc.constantFrom(2n ** 64n - 1n, 2n ** 53n, 2n ** 63n));
const cost = fc.oneof(fc.double(), fc.constantFrom(0, -0, NaN, Infinity, -Infinity, 1.25, Number.MIN_VALUE));
const data = fc.oneof(
  { weight: 20, arbitrary: fc.uint8Array({ maxLength: 300 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 70_000 }).map((n) => new Uint8Array(n).map((_, i) => (i * 31) & 0xff)) },
);
const opt = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 3 });
const some = { requiredKeys: [] as [] };
const endpoint = fc.record({ kind: enumValue, id: text }, some);
const subs = {
  source: opt(endpoint),
  destination: opt(endpoint),
  replyTo: opt(fc.record({ taskId: text, stepId: text, attempt: uint32 }, some)),
  payload: opt(fc.record({ data, contentType: text }, some)),
  usage: opt(fc.record({ cost, inputTokens: uint64, outputTokens: uint64, durationMs: uint64, pricedBy: text }, some)),
  error: opt(fc.record({ code: text, message: text, retryable: fc.boolean() }, some)),
  trace: opt(fc.record({ traceparent: text, tracestate: text }, some)),
  auth: opt(fc.record({ keyId: text, sender: text, mac: fc.uint8Array({ maxLength: 40 }) }, some)),
};
const envelopeInit: fc.Arbitrary<Init> = fc
  .record(
    {
      id: text, orgId: text, taskId: text, stepId: text, kind: enumValue, attempt: uint32, clearanceFloor: uint32,
      correlationId: text, delegationDepth: uint32, status: enumValue, sourceStepId: text, resultRef: text, createdAtMs: int64,
      turn: opt(uint32),
      ...subs,
    },
    some,
  )
  .map((r) => r as Init);

/** Protobuf wire bytes for unknown fields (numbers our messages do not define) and structured garbage. */
function varint(n: bigint): number[] {
  const out: number[] = [];
  let u = BigInt.asUintN(64, n);
  while (u > 0x7fn) { out.push(Number(u & 0x7fn) | 0x80); u >>= 7n; }
  out.push(Number(u));
  return out;
}
const tagged = (no: number, wt: number, body: number[]) => [...varint(BigInt(((no << 3) | wt) >>> 0)), ...body];
const fieldBody = (wt: number): fc.Arbitrary<number[]> => {
  switch (wt) {
    case 0: return fc.bigInt(0n, 2n ** 64n - 1n).map(varint);
    case 1: return fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 8, maxLength: 8 });
    case 2: return fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 20 }).map((b) => [...varint(BigInt(b.length)), ...b]);
    case 5: return fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 });
    default: return fc.constant([]);
  }
};
const unknownField = (minNo: number) =>
  fc.tuple(fc.oneof(fc.integer({ min: minNo, max: minNo + 20 }), fc.integer({ min: minNo, max: 2 ** 29 - 1 })), fc.constantFrom(0, 1, 2, 3, 5))
    .chain(([no, wt]) => (wt === 3
      ? fieldBody(0).map((inner) => [...tagged(no, 3, []), ...tagged(1, 0, inner), ...tagged(no, 4, [])])
      : fieldBody(wt).map((body) => tagged(no, wt, body))));
/** Any field number 0..25 (21 = auth, 22 = turn) with any wire type 0..7 and a plausible body: wrong wire types, groups, bad tags. */
const garbageField = fc.tuple(fc.integer({ min: 0, max: 25 }), fc.integer({ min: 0, max: 7 }))
  .chain(([no, wt]) => fieldBody(wt).map((body) => tagged(no, wt, body)));

// ---- comparison helpers ------------------------------------------------------------------------------

/**
 * Deep equality (Object.is on primitives, so NaN and -0 count) plus the same key order and prototype on every
 * object, since key order shows in logs. Hand-written because matcher equality is slow on 70 kB payloads.
 */
function difference(a: unknown, b: unknown, path = "$"): string | undefined {
  if (Object.is(a, b)) return undefined;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return `${path}: ${String(a)} vs ${String(b)}`;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return `${path}: different prototypes`;
  if (a instanceof Uint8Array) return Buffer.compare(a, b as Uint8Array) === 0 ? undefined : `${path}: different bytes`;
  const ka = Object.keys(a), kb = Object.keys(b);
  if (ka.join() !== kb.join()) return `${path}: keys ${ka.join()} vs ${kb.join()}`;
  for (const k of ka) {
    const d = difference((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
    if (d) return d;
  }
  return undefined;
}
function expectSameMessage(actual: unknown, expected: unknown): void {
  expect(difference(actual, expected)).toBeUndefined();
}

type Outcome = { ok: true; value: Envelope } | { ok: false; error: unknown };
function attempt(f: () => Envelope): Outcome {
  try {
    return { ok: true, value: f() };
  } catch (error) {
    return { ok: false, error };
  }
}

/** Lenient decoding equals fromBinary (value or throw); strict equals lenient or throws. */
function expectDecodesLikeFromBinary(bytes: Uint8Array): void {
  const ref = attempt(() => fromBinary(EnvelopeSchema, bytes));
  const lenient = attempt(() => envelopeFromBinary(bytes, { strict: false }));
  expect(lenient.ok).toBe(ref.ok);
  if (ref.ok && lenient.ok) {
    expectSameMessage(lenient.value, ref.value);
    expect(toBinaryBoth(lenient.value)).toEqual(toBinary(EnvelopeSchema, ref.value));
  }
  const strict = attempt(() => envelopeFromBinary(bytes));
  if (strict.ok) {
    expect(lenient.ok).toBe(true);
    if (lenient.ok) expectSameMessage(strict.value, lenient.value);
  }
}

/** envelopeToBinary, asserting the fast path handled it. */
function toBinaryBoth(e: Envelope): Uint8Array {
  const fast = tryEnvelopeToBinary(e);
  expect(Object.getPrototypeOf(fast)).toBe(Uint8Array.prototype); // a plain Uint8Array, as from toBinary
  expect(envelopeToBinary(e)).toEqual(fast);
  return fast!;
}

// ---- properties --------------------------------------------------------------------------------------

describe("envelope wire codec: equivalence with protobuf-es", () => {
  it("initEnvelope builds what create() builds", () => {
    fc.assert(
      fc.property(envelopeInit, fc.subarray(["id", "kind", "attempt", "createdAtMs", "source", "payload", "usage"]), (init, nulls) => {
        // create() skips null as it skips undefined.
        const withNulls = { ...init, ...Object.fromEntries(nulls.map((k) => [k, null])) } as Init;
        expectSameMessage(initEnvelope(withNulls), create(EnvelopeSchema, withNulls));
      }),
      RUNS,
    );
  }, PROPERTY_TIMEOUT_MS);

  it("encodes every envelope to the bytes toBinary writes, and decodes them to what fromBinary returns", () => {
    fc.assert(
      fc.property(envelopeInit, (init) => {
        const envelope = create(EnvelopeSchema, init);
        const bytes = toBinary(EnvelopeSchema, envelope);
        expect(toBinaryBoth(envelope)).toEqual(bytes);
        expect(toBinaryBoth(initEnvelope(init))).toEqual(bytes);
        const ref = fromBinary(EnvelopeSchema, bytes);
        expectSameMessage(envelopeFromBinary(bytes), ref);
        expectSameMessage(envelopeFromBinary(bytes, { strict: false }), ref);
      }),
      RUNS,
    );
  }, PROPERTY_TIMEOUT_MS);

  it("keeps unknown fields (top level and in sub-messages) and writes them back like protobuf-es", () => {
    const withUnknowns = fc.tuple(
      envelopeInit,
      fc.array(unknownField(23), { maxLength: 4 }),
      fc.array(unknownField(3), { maxLength: 3 }),
      fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 3 }),
    );
    fc.assert(
      fc.property(withUnknowns, ([init, top, inner, splits]) => {
        const known = Array.from(toBinary(EnvelopeSchema, create(EnvelopeSchema, init)));
        // An Endpoint carrying unknown fields, repeated to exercise sub-message merging.
        const source = tagged(6, 2, [...varint(BigInt(inner.flat().length + 2)), 8, 2, ...inner.flat()]);
        const pieces = [known, ...top, source, source];
        const at = splits.map((s) => s % pieces.length);
        const bytes = Uint8Array.from(pieces.flatMap((p, i) => (at.includes(i) ? [...p, ...p] : p)));
        expectDecodesLikeFromBinary(bytes);
        expectSameMessage(envelopeFromBinary(bytes), fromBinary(EnvelopeSchema, bytes));
      }),
      RUNS,
    );
  }, PROPERTY_TIMEOUT_MS);

  it("mutated envelopes decode like fromBinary or both throw", () => {
    const mutation = fc.tuple(fc.nat(), fc.integer({ min: 0, max: 3 }), fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 3 }));
    fc.assert(
      fc.property(envelopeInit, fc.array(mutation, { minLength: 1, maxLength: 4 }), (init, mutations) => {
        const bytes = Array.from(toBinary(EnvelopeSchema, create(EnvelopeSchema, init)));
        for (const [where, op, values] of mutations) {
          const i = bytes.length === 0 ? 0 : where % bytes.length;
          if (op === 0) bytes[i] = values[0]!; // overwrite
          else if (op === 1) bytes.splice(i, 0, ...values); // insert
          else if (op === 2) bytes.splice(i, values.length); // delete
          else bytes.length = i; // truncate
        }
        expectDecodesLikeFromBinary(Uint8Array.from(bytes));
      }),
      { numRuns: 2000 },
    );
  }, PROPERTY_TIMEOUT_MS);

  it("random and structured garbage decodes like fromBinary or both throw", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => expectDecodesLikeFromBinary(bytes)), { numRuns: 2000 });
    fc.assert(
      fc.property(fc.array(garbageField, { maxLength: 8 }), (fields) => expectDecodesLikeFromBinary(Uint8Array.from(fields.flat()))),
      { numRuns: 3000 },
    );
  });

  it("values of the wrong JS type take toBinary's own path, with its bytes or its error", () => {
    const odd = fc.constantFrom<Record<string, unknown>>(
      { createdAtMs: 1_700_000_000_000 }, { createdAtMs: "-42" }, { createdAtMs: 2n ** 63n }, { attempt: -1 }, { attempt: 1.5 },
      { kind: 2 ** 31 }, { turn: -1 }, { turn: 1.5 }, { id: undefined }, { status: undefined }, { source: null }, { usage: { $typeName: "x" } },
      { usage: { $typeName: "switchyard.bus.v1.Usage", cost: 0, inputTokens: 5, outputTokens: 0n, durationMs: 0n } },
      { error: { $typeName: "switchyard.bus.v1.ErrorInfo", code: "", message: "", retryable: 1 } },
      { $typeName: "switchyard.bus.v1.Endpoint" },
    );
    fc.assert(
      fc.property(envelopeInit, odd, (init, patch) => {
        const envelope = Object.assign(create(EnvelopeSchema, init), patch) as Envelope;
        expect(tryEnvelopeToBinary(envelope)).toBeUndefined();
        const ref = attempt(() => toBinary(EnvelopeSchema, envelope) as unknown as Envelope);
        const ours = attempt(() => envelopeToBinary(envelope) as unknown as Envelope);
        expect(ours.ok).toBe(ref.ok);
        if (ours.ok) expectSameMessage(ours.value, ref.ok && ref.value);
        else expect(String(ours.error)).toBe(String(!ref.ok && ref.error));
      }),
      { numRuns: 200 },
    );
  });
});

describe("envelope wire codec: chosen cases", () => {
  const bytesOf = (init: Init) => toBinary(EnvelopeSchema, create(EnvelopeSchema, init));

  it("omits cost -0 like 0, writes NaN and infinities, sign-extends negative enums, two's-complements int64", () => {
    for (const init of [
      { usage: { cost: -0 } }, { usage: { cost: NaN } }, { usage: { cost: -Infinity } }, { kind: -1 as EnvelopeKind }, { createdAtMs: -1n },
      { source: { kind: -(2 ** 31) as EndpointKind } }, { createdAtMs: -(2n ** 63n) }, { usage: { inputTokens: 2n ** 64n - 1n } },
      { turn: 0 }, { turn: 2 ** 32 - 1 }, { turn: 300, auth: { keyId: "k" } },
    ] as Init[]) {
      expect(toBinaryBoth(initEnvelope(init))).toEqual(bytesOf(init));
    }
    expect(Array.from(toBinaryBoth(initEnvelope({ usage: { cost: -0 } })))).toEqual([114, 0]);
    expect(toBinaryBoth(initEnvelope({ kind: -1 as EnvelopeKind }))).toHaveLength(11);
  });

  it("writes lone surrogates as U+FFFD and decodes invalid UTF-8 and a leading BOM as TextDecoder does", () => {
    expect(Array.from(toBinaryBoth(initEnvelope({ id: "a\ud800" })))).toEqual([10, 4, 0x61, 0xef, 0xbf, 0xbd]);
    for (const body of [[0xef, 0xbb, 0xbf, 0x61], [0xff, 0x61], [0xc3], [0xed, 0xa0, 0x80], [0xf0, 0x9f, 0x98]]) {
      const bytes = Uint8Array.from([10, body.length, ...body]);
      expect(envelopeFromBinary(bytes).id).toBe(fromBinary(EnvelopeSchema, bytes).id);
    }
    expect(envelopeFromBinary(Uint8Array.from([10, 4, 0xef, 0xbb, 0xbf, 0x61])).id).toBe("a");
  });

  it("throws on a truncated varint, a length beyond the buffer and an illegal tag", () => {
    for (const bad of [[0xa0, 0x01, 0xff], [10, 5, 0x61], [0x6a, 9, 10, 1], [0x07], [0x00], [0x8a]]) {
      expect(() => fromBinary(EnvelopeSchema, Uint8Array.from(bad))).toThrow();
      expect(() => envelopeFromBinary(Uint8Array.from(bad), { strict: false })).toThrow();
      expect(() => envelopeFromBinary(Uint8Array.from(bad))).toThrow();
    }
  });

  it("strict decoding refuses what protobuf-es misreads: wrong wire types, sub-message overruns, long varints", () => {
    const wrongWireType = Uint8Array.from([8, 1, 0x61]); // id (a string) sent as a varint
    expect(fromBinary(EnvelopeSchema, wrongWireType).id).toBe("a");
    expect(envelopeFromBinary(wrongWireType, { strict: false }).id).toBe("a");
    expect(() => envelopeFromBinary(wrongWireType)).toThrow(/wire type 0, expected 2/);
    const overrun = Uint8Array.from([0x32, 1, 0x12, 2, 0x61, 0x62]); // source of length 1 holding a 4-byte field
    expect(fromBinary(EnvelopeSchema, overrun).source?.id).toBe("ab");
    expect(() => envelopeFromBinary(overrun)).toThrow(/runs past its length/);
    const longVarint = Uint8Array.from([0xb8, 0x01, ...Array(11).fill(0x80), 0]); // unknown field 23 (22 is turn)
    expect(fromBinary(EnvelopeSchema, longVarint).$unknown).toHaveLength(1);
    expect(() => envelopeFromBinary(longVarint)).toThrow(/invalid varint/);
  });

  it("decodeEnvelope reports strict-mode refusals as MALFORMED_ENVELOPE", () => {
    const valid = encodeEnvelope(initEnvelope({ id: "e", orgId: "o", taskId: "t", stepId: "s", kind: 2 }), 1024);
    expect(decodeEnvelope(valid, 1024).id).toBe("e");
    const again = Uint8Array.from([...valid, 0x28, 0x02]); // kind repeated: the last one wins
    expect(decodeEnvelope(again, 1024).kind).toBe(2);
    // correlation_id (field 11, a string) sent as varint 0: protobuf-es reads it as "" and validation passes.
    const misread = Uint8Array.from([...valid, 0x58, 0x00]);
    expect(fromBinary(EnvelopeSchema, misread).correlationId).toBe("");
    expect(() => decodeEnvelope(misread, 1024)).toThrow(
      expect.objectContaining({ code: ErrorCode.MalformedEnvelope }),
    );
  });

  it("create shortcuts: a message init is returned as is, sub-messages are reused, byte arrays converted", () => {
    const source = create(EnvelopeSchema, { source: { id: "x" } }).source!;
    const init = { id: "e", source, payload: { data: [1, 2, 3] as unknown as Uint8Array } };
    const ours = initEnvelope(init);
    expect(ours.source).toBe(source);
    expect(ours.payload?.data).toEqual(new Uint8Array([1, 2, 3]));
    expect(initEnvelope(ours)).toBe(ours);
    expect(create(EnvelopeSchema, ours)).toBe(ours);
    // A message of another type is read as a plain init object.
    const replyTo = create(EnvelopeSchema, { replyTo: { taskId: "t", attempt: 2 } }).replyTo!;
    const crossed = { source: replyTo, destination: "not an object", trace: [1] } as unknown as Init;
    expectSameMessage(initEnvelope(crossed), create(EnvelopeSchema, crossed));
  });

  it("decoded payload bytes are views into the input, like fromBinary's", () => {
    const bytes = bytesOf({ payload: { data: new Uint8Array([1, 2, 3]) } });
    expect(envelopeFromBinary(bytes).payload!.data.buffer).toBe(bytes.buffer);
    expect(fromBinary(EnvelopeSchema, bytes).payload!.data.buffer).toBe(bytes.buffer);
  });
});

/**
 * A hand-rolled protobuf codec for the bus Envelope (proto/switchyard/bus/v1/envelope.proto), because the
 * reflection-based `create` / `toBinary` / `fromBinary` of @bufbuild/protobuf cost tens of µs per hop.
 *
 * The contract is equivalence with protobuf-es 2.10, proven by test/bus/envelope-wire.test.ts:
 * - `initEnvelope(init)` builds the same object as `create(EnvelopeSchema, init)` (including reusing init
 *   objects that already are messages of the right type, and leaving scalar values unconverted).
 * - `envelopeToBinary(e)` writes the same bytes as `toBinary(EnvelopeSchema, e)`: ascending field order, zero
 *   scalars omitted (so `cost` -0 is omitted like 0, NaN is written), sub-messages written when present even
 *   if empty, lone surrogates written as U+FFFD like TextEncoder, `$unknown` fields written back last.
 *   A message whose values are not of their declared JS types goes to `toBinary` itself, so odd input keeps
 *   its exact old behaviour (bytes or error) instead of being re-specified here.
 * - `envelopeFromBinary(bytes, { strict: false })` returns the same object as `fromBinary` or throws where it
 *   throws: unknown fields kept in `$unknown` (views into `bytes`, as are `payload.data` bytes), a repeated
 *   sub-message merged into the earlier one, invalid UTF-8 replaced by U+FFFD and a leading BOM dropped
 *   (TextDecoder defaults). The default, strict, additionally refuses what protobuf-es silently misreads: a
 *   known field with the wrong wire type, a sub-message whose fields run past its length, and an unknown
 *   varint longer than 10 bytes.
 */export { initEnvelope } from "./wire/init.js";
export { envelopeToBinary, tryEnvelopeToBinary } from "./wire/encode.js";
export { envelopeFromBinary, type EnvelopeDecodeOptions } from "./wire/decode.js";

/** `toBinary(EnvelopeSchema, e)`, without reflection (see ../envelope-wire.ts for the contract). */
import { toBinary, type UnknownField } from "@bufbuild/protobuf";
import { isMessageOf } from "./init.js";
import { EnvelopeSchema, type Envelope } from "../../gen/switchyard/bus/v1/envelope_pb.js";
import {
  ENVELOPE,
  ENDPOINT,
  PAYLOAD,
  REPLY_TO,
  USAGE,
  ERROR_INFO,
  TRACE,
  BUS_AUTH,
  INT64_MIN,
  INT64_MAX,
  UINT64_MAX,
  SAFE,
  type Loose,
  type AnyMessage,
} from "./shared.js";

// Sizes are NaN for a value outside the fast path; NaN propagates through the sums to the fallback.
const varintSize = (v: number): number => (v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5);

function utf8Size(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c < 0xdc00 && c >= 0xd800 && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) { n += 2; i++; }
    else n += 2; // three bytes, lone surrogates included (as U+FFFD)
  }
  return n;
}

function str(t: number, v: unknown): number {
  if (v === "") return 0;
  if (typeof v !== "string") return NaN;
  const n = utf8Size(v);
  return t + varintSize(n) + n;
}
const u32 = (t: number, v: unknown): number =>
  v === 0 ? 0 : typeof v === "number" && Number.isInteger(v) && v > 0 && v <= 0xffffffff ? t + varintSize(v) : NaN;
/** An `optional uint32` (explicit presence): written whenever set, 0 included. */
const optU32 = (t: number, v: unknown): number => (v === undefined ? 0 : v === 0 ? t + 1 : u32(t, v));
const enm = (t: number, v: unknown): number =>
  v === 0 ? 0 : typeof v === "number" && Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff ? t + (v < 0 ? 10 : varintSize(v)) : NaN;
const dbl = (t: number, v: unknown): number => (v === 0 ? 0 : typeof v === "number" ? t + 8 : NaN);
const bool = (t: number, v: unknown): number => (v === false ? 0 : v === true ? t + 1 : NaN);
const bytes = (t: number, v: unknown): number =>
  v instanceof Uint8Array ? (v.byteLength === 0 ? 0 : t + varintSize(v.byteLength) + v.byteLength) : NaN;
function long(t: number, v: unknown, min: bigint, max: bigint): number {
  if (typeof v !== "bigint" || v < min || v > max) return NaN;
  if (v === 0n) return 0;
  if (v < 0n) return t + 10;
  let n = 1;
  if (v < SAFE) for (let x = Number(v); x >= 0x80; x = Math.floor(x / 0x80)) n++;
  else for (let u = v; u >= 0x80n; u >>= 7n) n++;
  return t + n;
}
const u64 = (t: number, v: unknown) => long(t, v, 0n, UINT64_MAX);

function unknownSize(m: AnyMessage): number {
  const list = m.$unknown as unknown;
  if (list == null) return 0;
  if (!Array.isArray(list)) return NaN;
  let n = 0;
  for (const f of list as UnknownField[]) {
    if (!(f.data instanceof Uint8Array)) return NaN;
    n += varintSize(((f.no << 3) | f.wireType) >>> 0) + f.data.byteLength;
  }
  return n;
}

/** Content size of sub-message `key`: -1 when absent, NaN outside the fast path. */
function subSize(e: AnyMessage, key: string, typeName: string): number {
  const m = e[key];
  if (m === undefined) return -1;
  // protobuf-es counts a sub-message as present only as an own property.
  if (!Object.hasOwn(e, key) || !isMessageOf(m, typeName)) return NaN;
  const x = m as AnyMessage;
  const u = unknownSize(x);
  switch (typeName) {
    case ENDPOINT: return enm(1, x.kind) + str(1, x.id) + u;
    case PAYLOAD: return bytes(1, x.data) + str(1, x.contentType) + u;
    case REPLY_TO: return str(1, x.taskId) + str(1, x.stepId) + u32(1, x.attempt) + u;
    case USAGE: return dbl(1, x.cost) + u64(1, x.inputTokens) + u64(1, x.outputTokens) + u64(1, x.durationMs) + str(1, x.pricedBy) + u;
    case ERROR_INFO: return str(1, x.code) + str(1, x.message) + bool(1, x.retryable) + u;
    case BUS_AUTH: return str(1, x.keyId) + str(1, x.sender) + bytes(1, x.mac) + u;
    default: return str(1, x.traceparent) + str(1, x.tracestate) + u;
  }
}
const framed = (t: number, size: number): number => (size < 0 ? 0 : t + varintSize(size) + size);

/** Writes into a buffer sized exactly by the size pass; values were type-checked there. */
class Writer {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}

  varint(v: number): void {
    while (v > 0x7f) { this.buf[this.pos++] = (v & 0x7f) | 0x80; v >>>= 7; }
    this.buf[this.pos++] = v;
  }
  /** Negative int32 (enums) sign-extend to ten bytes, as protobuf-es varint32write does. */
  int32(tag: number, v: number): void {
    if (v === 0) return;
    this.varint(tag);
    if (v > 0) return this.varint(v);
    for (let i = 0; i < 9; i++) { this.buf[this.pos++] = (v & 0x7f) | 0x80; v >>= 7; }
    this.buf[this.pos++] = 1;
  }
  uint32(tag: number, v: number): void {
    if (v !== 0) { this.varint(tag); this.varint(v); }
  }
  int64(tag: number, v: bigint): void {
    if (v === 0n) return;
    this.varint(tag);
    if (v > 0n && v < SAFE) {
      let n = Number(v);
      for (; n > 0x7f; n = Math.floor(n / 0x80)) this.buf[this.pos++] = (n % 0x80) | 0x80;
      this.buf[this.pos++] = n;
      return;
    }
    let u = BigInt.asUintN(64, v);
    for (; u > 0x7fn; u >>= 7n) this.buf[this.pos++] = Number(u & 0x7fn) | 0x80;
    this.buf[this.pos++] = Number(u);
  }
  string(tag: number, s: string): void {
    if (s === "") return;
    this.varint(tag);
    // Up to 42 UTF-16 units the UTF-8 length fits one prefix byte: write the text first, the length after.
    const short = s.length <= 42;
    if (!short) this.varint(utf8Size(s));
    const buf = this.buf, start = short ? this.pos + 1 : this.pos;
    let p = start;
    for (let i = 0; i < s.length; i++) {
      let c = s.charCodeAt(i);
      if (c < 0x80) { buf[p++] = c; continue; }
      if (c < 0x800) { buf[p++] = 0xc0 | (c >> 6); buf[p++] = 0x80 | (c & 0x3f); continue; }
      if (c >= 0xd800 && c < 0xe000) {
        const d = s.charCodeAt(i + 1);
        if (c < 0xdc00 && (d & 0xfc00) === 0xdc00) {
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
          buf[p++] = 0xf0 | (c >> 18); buf[p++] = 0x80 | ((c >> 12) & 0x3f);
          buf[p++] = 0x80 | ((c >> 6) & 0x3f); buf[p++] = 0x80 | (c & 0x3f);
          continue;
        }
        c = 0xfffd;
      }
      buf[p++] = 0xe0 | (c >> 12); buf[p++] = 0x80 | ((c >> 6) & 0x3f); buf[p++] = 0x80 | (c & 0x3f);
    }
    if (short) buf[start - 1] = p - start;
    this.pos = p;
  }
  bytes(tag: number, data: Uint8Array): void {
    if (data.byteLength === 0) return;
    this.varint(tag);
    this.varint(data.byteLength);
    this.buf.set(data, this.pos);
    this.pos += data.byteLength;
  }
  unknown(m: AnyMessage): void {
    for (const f of m.$unknown ?? []) {
      this.varint(((f.no << 3) | f.wireType) >>> 0);
      this.buf.set(f.data, this.pos);
      this.pos += f.data.byteLength;
    }
  }
  message(tag: number, m: AnyMessage | undefined, size: number): void {
    if (size < 0 || m === undefined) return;
    this.varint(tag);
    this.varint(size);
    const x = m as Loose;
    switch (m.$typeName) {
      case ENDPOINT: this.int32(8, x.kind as number); this.string(18, x.id as string); break;
      case PAYLOAD: this.bytes(10, x.data as Uint8Array); this.string(18, x.contentType as string); break;
      case REPLY_TO: this.string(10, x.taskId as string); this.string(18, x.stepId as string); this.uint32(24, x.attempt as number); break;
      case USAGE:
        if (x.cost !== 0) {
          this.varint(9);
          new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8).setFloat64(0, x.cost as number, true);
          this.pos += 8;
        }
        this.int64(16, x.inputTokens as bigint); this.int64(24, x.outputTokens as bigint); this.int64(32, x.durationMs as bigint);
        this.string(42, x.pricedBy as string);
        break;
      case ERROR_INFO:
        this.string(10, x.code as string); this.string(18, x.message as string); this.uint32(24, x.retryable ? 1 : 0);
        break;
      case BUS_AUTH: this.string(10, x.keyId as string); this.string(18, x.sender as string); this.bytes(26, x.mac as Uint8Array); break;
      default: this.string(10, x.traceparent as string); this.string(18, x.tracestate as string);
    }
    this.unknown(m);
  }
}

/** The fast path alone: the bytes `toBinary` writes, or undefined when `e` holds values it does not handle. */
export function tryEnvelopeToBinary(e: Envelope): Uint8Array | undefined {
  if (!isMessageOf(e, ENVELOPE)) return undefined;
  const x = e as unknown as AnyMessage;
  const source = subSize(x, "source", ENDPOINT), destination = subSize(x, "destination", ENDPOINT);
  const replyTo = subSize(x, "replyTo", REPLY_TO), payload = subSize(x, "payload", PAYLOAD);
  const usage = subSize(x, "usage", USAGE), error = subSize(x, "error", ERROR_INFO), trace = subSize(x, "trace", TRACE);
  const auth = subSize(x, "auth", BUS_AUTH);
  const total = str(1, x.id) + str(1, x.orgId) + str(1, x.taskId) + str(1, x.stepId) + enm(1, x.kind) +
    framed(1, source) + framed(1, destination) + u32(1, x.attempt) + u32(1, x.clearanceFloor) + framed(1, replyTo) +
    str(1, x.correlationId) + u32(1, x.delegationDepth) + framed(1, payload) + framed(1, usage) + enm(1, x.status) +
    framed(2, error) + str(2, x.sourceStepId) + str(2, x.resultRef) + framed(2, trace) +
    long(2, x.createdAtMs, INT64_MIN, INT64_MAX) + framed(2, auth) + optU32(2, x.turn) + unknownSize(x);
  if (Number.isNaN(total)) return undefined;
  // From Node's Buffer pool: `new Uint8Array(n)` above 64 bytes costs ~0.8 µs. Every byte gets written
  // (checked below), and callers get a plain Uint8Array view as from toBinary.
  const pooled = Buffer.allocUnsafe(total);
  const w = new Writer(new Uint8Array(pooled.buffer, pooled.byteOffset, total));
  w.string(10, e.id); w.string(18, e.orgId); w.string(26, e.taskId); w.string(34, e.stepId); w.int32(40, e.kind);
  w.message(50, e.source, source); w.message(58, e.destination, destination);
  w.uint32(64, e.attempt); w.uint32(72, e.clearanceFloor); w.message(82, e.replyTo, replyTo);
  w.string(90, e.correlationId); w.uint32(96, e.delegationDepth);
  w.message(106, e.payload, payload); w.message(114, e.usage, usage); w.int32(120, e.status);
  w.message(130, e.error, error); w.string(138, e.sourceStepId); w.string(146, e.resultRef); w.message(154, e.trace, trace);
  w.int64(160, e.createdAtMs); w.message(170, e.auth, auth);
  if (e.turn !== undefined) { w.varint(176); w.varint(e.turn); }
  w.unknown(x);
  if (w.pos !== total) throw new Error(`envelope encoder wrote ${w.pos} of ${total} bytes`);
  return w.buf;
}

/** The bytes `toBinary(EnvelopeSchema, e)` writes (and its errors, for values of the wrong JS type). */
export function envelopeToBinary(e: Envelope): Uint8Array {
  return tryEnvelopeToBinary(e) ?? toBinary(EnvelopeSchema, e);
}

/** `fromBinary(EnvelopeSchema, bytes)`, without reflection (see ../envelope-wire.ts for the contract). */
import type { UnknownField } from "@bufbuild/protobuf";
import { zeroBusAuth, zeroEndpoint, zeroEnvelope, zeroError, zeroPayload, zeroReplyTo, zeroTrace, zeroUsage } from "./init.js";
import {
  type BusAuth,
  type Endpoint,
  type Envelope,
  type ErrorInfo,
  type Payload,
  type ReplyTo,
  type TraceContext,
  type Usage,
} from "../../gen/switchyard/bus/v1/envelope_pb.js";
import { VARINT, I64, LEN, SGROUP, EGROUP, I32, type AnyMessage } from "./shared.js";

export interface EnvelopeDecodeOptions {
  /** Also refuse wrong wire types, sub-message overruns and over-long unknown varints (default true). */
  strict?: boolean;
}

const utf8 = new TextDecoder();
const eof = (): RangeError => new RangeError("premature EOF");

/** Mirrors protobuf-es BinaryReader: bounds are the whole buffer, never the enclosing sub-message. */
class Reader {
  pos = 0;
  no = 0;
  wt = 0;
  hi = 0;
  readonly len: number;
  constructor(readonly buf: Uint8Array, readonly strict: boolean) { this.len = buf.length; }

  byte(): number {
    if (this.pos >= this.len) throw eof();
    return this.buf[this.pos++]!;
  }
  /** varint32read: up to ten bytes, the low 32 bits kept. */
  uint32(): number {
    let v = 0, b = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      b = this.byte(); v |= (b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
    b = this.byte(); v |= (b & 0x0f) << 28;
    for (let n = 5; b >= 0x80 && n < 10; n++) b = this.byte();
    if (b >= 0x80) throw new Error("invalid varint");
    return v >>> 0;
  }
  /** varint64read: returns the low half, leaves the high half in `hi` (both as signed 32-bit). */
  varint64(): number {
    let lo = 0, b = 0;
    this.hi = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      b = this.byte(); lo |= (b & 0x7f) << shift;
      if (b < 0x80) return lo;
    }
    b = this.byte(); lo |= (b & 0x0f) << 28; this.hi = (b & 0x70) >> 4;
    if (b < 0x80) return lo;
    for (let shift = 3; shift <= 31; shift += 7) {
      b = this.byte(); this.hi |= (b & 0x7f) << shift;
      if (b < 0x80) return lo;
    }
    throw new Error("invalid varint");
  }
  uint64(signed: boolean): bigint {
    const lo = this.varint64() >>> 0, hi = this.hi;
    if (hi >= 0 && hi <= 0x1fffff) return BigInt(hi * 0x100000000 + lo);
    const u = (BigInt(hi >>> 0) << 32n) | BigInt(lo);
    return signed ? BigInt.asIntN(64, u) : u;
  }
  bool(): boolean {
    return (this.varint64() | this.hi) !== 0;
  }
  double(): number {
    if (this.pos + 8 > this.len) throw eof();
    this.pos += 8;
    return new DataView(this.buf.buffer, this.buf.byteOffset + this.pos - 8, 8).getFloat64(0, true);
  }
  bytes(): Uint8Array {
    const n = this.uint32(), start = this.pos;
    if (n > this.len - start) throw eof();
    this.pos = start + n;
    return this.buf.subarray(start, this.pos);
  }
  string(): string {
    const n = this.uint32(), start = this.pos, end = start + n, buf = this.buf;
    if (n > this.len - start) throw eof();
    this.pos = end;
    // TextDecoder is what protobuf-es uses (replacement characters, BOM dropped); below ~10 ASCII bytes
    // building the string by hand is faster.
    if (n > 10) return utf8.decode(buf.subarray(start, end));
    let s = "";
    for (let i = start; i < end; i++) {
      const c = buf[i]!;
      if (c >= 0x80) return utf8.decode(buf.subarray(start, end));
      s += String.fromCharCode(c);
    }
    return s;
  }
  /** Reads a tag; returns the field number and leaves the wire type in `wt`. */
  tag(): number {
    const tag = this.uint32();
    this.no = tag >>> 3;
    this.wt = tag & 7;
    if (this.no <= 0 || this.wt > I32) throw new Error(`illegal tag: field no ${this.no} wire type ${this.wt}`);
    return this.no;
  }
  /** protobuf-es reads a known field by its declared type whatever the wire type says; strict refuses. */
  want(wt: number, m: AnyMessage): this {
    if (this.strict && this.wt !== wt) throw new Error(`${m.$typeName} field ${this.no}: wire type ${this.wt}, expected ${wt}`);
    return this;
  }
  /** Like BinaryReader.skip: the skipped bytes after the tag. */
  skip(wt: number, no: number): Uint8Array {
    const start = this.pos;
    if (wt === VARINT) {
      let n = 1;
      while (this.byte() >= 0x80) n++;
      if (this.strict && n > 10) throw new Error("invalid varint");
    } else if (wt === I64 || wt === I32) {
      const n = wt === I64 ? 8 : 4;
      if (this.pos + n > this.len) throw eof();
      this.pos += n;
    } else if (wt === LEN) {
      const n = this.uint32();
      if (n > this.len - this.pos) throw eof();
      this.pos += n;
    } else if (wt === SGROUP) {
      for (let fn = this.tag(); this.wt !== EGROUP; fn = this.tag()) this.skip(this.wt, fn);
      if (this.no !== no) throw new Error("invalid end group tag");
    } else {
      throw new Error(`cant skip wire type ${wt}`);
    }
    return this.buf.subarray(start, this.pos);
  }
  /** Skips the unknown field just tagged into `list` (started from `m.$unknown` for merged messages). */
  unknown(list: UnknownField[] | undefined, m: AnyMessage): UnknownField[] {
    const no = this.no, wireType = this.wt;
    const data = this.skip(wireType, no);
    list ??= m.$unknown ?? [];
    list.push({ no, wireType, data });
    return list;
  }
  /** Like protobuf-es, `$unknown` is assigned once the message is read, so it comes last among the keys. */
  done(m: AnyMessage, end: number, unknown: UnknownField[] | undefined): void {
    if (this.strict && this.pos !== end) throw new Error(`${m.$typeName} runs past its length`);
    if (unknown) m.$unknown = unknown;
  }
}

/** Reads fields until `end` into `m` (a repeated sub-message merges); `field` returns false for unknown ones. */
function readFields<T extends AnyMessage>(r: Reader, m: T, end: number, field: (r: Reader, m: T) => boolean): T {
  let u: UnknownField[] | undefined;
  while (r.pos < end) {
    r.tag();
    if (!field(r, m)) u = r.unknown(u, m);
  }
  r.done(m, end, u);
  return m;
}
const readSub = <T extends AnyMessage>(r: Reader, m: T, field: (r: Reader, m: T) => boolean): T =>
  readFields(r, m, r.uint32() + r.pos, field);

function endpointField(r: Reader, m: Endpoint): boolean {
  switch (r.no) {
    case 1: m.kind = r.want(VARINT, m).uint32() | 0; return true;
    case 2: m.id = r.want(LEN, m).string(); return true;
    default: return false;
  }
}
function payloadField(r: Reader, m: Payload): boolean {
  switch (r.no) {
    case 1: m.data = r.want(LEN, m).bytes(); return true;
    case 2: m.contentType = r.want(LEN, m).string(); return true;
    default: return false;
  }
}
function replyToField(r: Reader, m: ReplyTo): boolean {
  switch (r.no) {
    case 1: m.taskId = r.want(LEN, m).string(); return true;
    case 2: m.stepId = r.want(LEN, m).string(); return true;
    case 3: m.attempt = r.want(VARINT, m).uint32(); return true;
    default: return false;
  }
}
function usageField(r: Reader, m: Usage): boolean {
  switch (r.no) {
    case 1: m.cost = r.want(I64, m).double(); return true;
    case 2: m.inputTokens = r.want(VARINT, m).uint64(false); return true;
    case 3: m.outputTokens = r.want(VARINT, m).uint64(false); return true;
    case 4: m.durationMs = r.want(VARINT, m).uint64(false); return true;
    case 5: m.pricedBy = r.want(LEN, m).string(); return true;
    default: return false;
  }
}
function errorField(r: Reader, m: ErrorInfo): boolean {
  switch (r.no) {
    case 1: m.code = r.want(LEN, m).string(); return true;
    case 2: m.message = r.want(LEN, m).string(); return true;
    case 3: m.retryable = r.want(VARINT, m).bool(); return true;
    default: return false;
  }
}
function traceField(r: Reader, m: TraceContext): boolean {
  switch (r.no) {
    case 1: m.traceparent = r.want(LEN, m).string(); return true;
    case 2: m.tracestate = r.want(LEN, m).string(); return true;
    default: return false;
  }
}
function authField(r: Reader, m: BusAuth): boolean {
  switch (r.no) {
    case 1: m.keyId = r.want(LEN, m).string(); return true;
    case 2: m.sender = r.want(LEN, m).string(); return true;
    case 3: m.mac = r.want(LEN, m).bytes(); return true;
    default: return false;
  }
}
function envelopeField(r: Reader, e: Envelope): boolean {
  switch (r.no) {
    case 1: e.id = r.want(LEN, e).string(); return true;
    case 2: e.orgId = r.want(LEN, e).string(); return true;
    case 3: e.taskId = r.want(LEN, e).string(); return true;
    case 4: e.stepId = r.want(LEN, e).string(); return true;
    case 5: e.kind = r.want(VARINT, e).uint32() | 0; return true;
    case 6: e.source = readSub(r.want(LEN, e), e.source ?? zeroEndpoint(), endpointField); return true;
    case 7: e.destination = readSub(r.want(LEN, e), e.destination ?? zeroEndpoint(), endpointField); return true;
    case 8: e.attempt = r.want(VARINT, e).uint32(); return true;
    case 9: e.clearanceFloor = r.want(VARINT, e).uint32(); return true;
    case 10: e.replyTo = readSub(r.want(LEN, e), e.replyTo ?? zeroReplyTo(), replyToField); return true;
    case 11: e.correlationId = r.want(LEN, e).string(); return true;
    case 12: e.delegationDepth = r.want(VARINT, e).uint32(); return true;
    case 13: e.payload = readSub(r.want(LEN, e), e.payload ?? zeroPayload(), payloadField); return true;
    case 14: e.usage = readSub(r.want(LEN, e), e.usage ?? zeroUsage(), usageField); return true;
    case 15: e.status = r.want(VARINT, e).uint32() | 0; return true;
    case 16: e.error = readSub(r.want(LEN, e), e.error ?? zeroError(), errorField); return true;
    case 17: e.sourceStepId = r.want(LEN, e).string(); return true;
    case 18: e.resultRef = r.want(LEN, e).string(); return true;
    case 19: e.trace = readSub(r.want(LEN, e), e.trace ?? zeroTrace(), traceField); return true;
    case 20: e.createdAtMs = r.want(VARINT, e).uint64(true); return true;
    case 21: e.auth = readSub(r.want(LEN, e), e.auth ?? zeroBusAuth(), authField); return true;
    case 22: e.turn = r.want(VARINT, e).uint32(); return true;
    default: return false;
  }
}

/** The message `fromBinary(EnvelopeSchema, bytes)` returns; see the file comment for `strict`. */
export function envelopeFromBinary(bytes: Uint8Array, options: EnvelopeDecodeOptions = {}): Envelope {
  return readFields(new Reader(bytes, options.strict ?? true), zeroEnvelope(), bytes.byteLength, envelopeField);
}

/**
 * Small conversions between domain values and protobuf well-known types, used in both directions: by the gateway
 * (domain → proto) and by the CLI's remote mode (proto → domain, which must print exactly what direct mode prints).
 */
import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate, ValueSchema, type Timestamp, type Value } from "@bufbuild/protobuf/wkt";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { clampJsonDepth, MAX_READ_JSON_DEPTH } from "../../json-depth.js";

/**
 * Any JSON value (task input, step output) as a `google.protobuf.Value`. Clamped to MAX_READ_JSON_DEPTH: the conversion
 * recurses, and a value stored before the intake checks (or by a worker) must not make the task unreadable.
 */
export function toValue(value: unknown): Value {
  return fromJson(ValueSchema, clampJsonDepth(value ?? null, MAX_READ_JSON_DEPTH) as JsonValue);
}

/** An unset Value reads as null, the way a missing output does in the TaskView. */
export function fromValue(value: Value | undefined): unknown {
  return value === undefined ? null : toJson(ValueSchema, value);
}

export function toTimestamp(value: Date | string | number | null | undefined): Timestamp | undefined {
  if (value === null || value === undefined) return undefined;
  return timestampFromDate(value instanceof Date ? value : new Date(value));
}

export function fromTimestamp(value: Timestamp | undefined): Date | null {
  return value === undefined ? null : timestampDate(value);
}

/** ISO 8601 with milliseconds, as `Date.prototype.toISOString` (and so the CLI's direct mode) writes it. */
export function isoFromTimestamp(value: Timestamp | undefined): string | null {
  return fromTimestamp(value)?.toISOString() ?? null;
}

/** int64 fields arrive as bigint; every one of ours (seq, ms since epoch) fits a double exactly. */
export function int64ToNumber(value: bigint): number {
  return Number(value);
}

/**
 * Re-orders an object's keys the way PostgreSQL's jsonb stores them (shorter keys first, then bytewise), so an
 * object rebuilt from typed fields serialises exactly like the same object read from a jsonb column.
 */
export function jsonbKeyOrder<T extends object>(value: T): T {
  const entries = Object.entries(value).sort(([a], [b]) => {
    const la = Buffer.byteLength(a);
    const lb = Buffer.byteLength(b);
    return la !== lb ? la - lb : Buffer.compare(Buffer.from(a), Buffer.from(b));
  });
  return Object.fromEntries(entries) as T;
}

/** Maps a closed set of domain strings onto a protobuf enum and back. UNSPECIFIED (0) maps to nothing. */
export interface EnumMapping<S extends string, E extends number> {
  toProto(value: S): E;
  fromProto(value: E): S;
  /** undefined for UNSPECIFIED or an unknown number (a request that did not say). */
  fromProtoOptional(value: E): S | undefined;
  values: readonly S[];
}

export function enumMapping<S extends string, E extends number>(what: string, pairs: ReadonlyArray<readonly [S, E]>): EnumMapping<S, E> {
  const toProto = new Map<S, E>(pairs.map(([s, e]) => [s, e]));
  const fromProto = new Map<E, S>(pairs.map(([s, e]) => [e, s]));
  return {
    values: pairs.map(([s]) => s),
    toProto(value) {
      const mapped = toProto.get(value);
      if (mapped === undefined) throw new SwitchyardError(ErrorCode.Internal, `no protobuf value for ${what} "${value}"`);
      return mapped;
    },
    fromProto(value) {
      const mapped = fromProto.get(value);
      if (mapped === undefined) throw new SwitchyardError(ErrorCode.Internal, `unknown ${what} ${value} from the server`);
      return mapped;
    },
    fromProtoOptional(value) {
      return fromProto.get(value);
    },
  };
}

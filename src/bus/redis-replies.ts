/**
 * Reading Redis stream replies (entries, fields, dead-letter records) and validating the adapter's options:
 * the small pieces the Redis bus adapter is built from.
 */
import type { DeadLetter } from "./bus.js";
import { DEAD_FIELDS } from "./lua/fields.js";
import { ErrorCode, SwitchyardError } from "../errors.js";

/** An entry as Redis returns it: id and flat field/value list (null when the entry was deleted). */
export type RawEntry = [id: Buffer, fields: Buffer[] | null];

export function parseDeadLetter(stream: string, id: string, fields: Buffer[]): DeadLetter {
  const text = (name: string): string => fieldValue(fields, Buffer.from(name))?.toString() ?? "";
  const raw = fieldValue(fields, Buffer.from(DEAD_FIELDS.raw));
  return {
    id,
    stream: text(DEAD_FIELDS.stream) || stream,
    originalId: text(DEAD_FIELDS.originalId),
    reason: text(DEAD_FIELDS.reason),
    deliveries: Number(text(DEAD_FIELDS.deliveries)) || 0,
    raw: raw ? new Uint8Array(raw) : new Uint8Array(),
    atMs: Number(text(DEAD_FIELDS.atMs)) || Number(id.split("-")[0]),
  };
}

/** The entries of a single-stream XREADGROUP reply (`null` when nothing arrived). */
export function streamEntriesOf(reply: unknown): RawEntry[] {
  if (!Array.isArray(reply) || reply.length === 0) return [];
  const [, entries] = reply[0] as [Buffer, RawEntry[] | null];
  return entries ?? [];
}

/** Every stream's entries of a multi-stream XREADGROUP / XREAD reply, by key. */
export function streamsEntriesOf(reply: unknown): Array<[key: string, entries: RawEntry[]]> {
  if (!Array.isArray(reply)) return [];
  return (reply as Array<[Buffer, RawEntry[] | null]>).map(([key, entries]) => [key.toString(), entries ?? []]);
}

export function fieldValue(fields: readonly Buffer[], name: Buffer): Buffer | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i]!.equals(name)) return fields[i + 1];
  }
  return undefined;
}

export function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Redis error codes (NOGROUP, BUSYGROUP) lead the message, also when raised inside a script. */
export function hasErrorPrefix(error: unknown, prefix: string): boolean {
  return error instanceof Error && error.message.startsWith(prefix);
}

export function assertPositiveInteger(value: number, path: string): void {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `${path} must be a positive integer, got ${value}`, { details: { path } });
  }
}

export function assertNonNegativeInteger(value: number, path: string): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `${path} must be a non-negative integer, got ${value}`, { details: { path } });
  }
}

/**
 * Logical stream names → Redis keys, and consumer names.
 *
 * A stream and its dead-letter stream share one hash tag (`{role:writer}`) so that the Lua scripts which touch
 * both (dead-lettering, reclaim, replay) stay within one Redis Cluster slot.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { ErrorCode, SwitchyardError } from "../errors.js";

/**
 * `coordinator`, `role:writer`, `team:ops`, `foreign:x`, and any future `word` / `word:id` of the same shape.
 * Braces are excluded because Redis would take them as (part of) the hash tag.
 */
const STREAM_NAME_RE = /^[a-z][a-z0-9_-]{0,31}(?::[A-Za-z0-9][A-Za-z0-9_.-]{0,127})?$/;

/** Stream entry ids as Redis prints them (`<ms>-<seq>`). */
const ENTRY_ID_RE = /^\d{1,20}-\d{1,20}$/;

export function assertStreamName(stream: string): void {
  if (typeof stream !== "string" || !STREAM_NAME_RE.test(stream)) {
    throw new SwitchyardError(
      ErrorCode.InvalidArgument,
      `stream name ${JSON.stringify(stream)} is not valid: expected "coordinator" or KIND:NAME such as "role:writer" ` +
        `(lowercase kind; name of letters, digits, "_", ".", "-"; no braces)`,
      { details: { path: "stream", stream } },
    );
  }
}

export function assertKeyPrefix(prefix: string): void {
  if (typeof prefix !== "string" || /[{}]/.test(prefix)) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `key prefix ${JSON.stringify(prefix)} must not contain "{" or "}" (they would replace the Cluster hash tag)`, {
      details: { path: "keyPrefix", prefix },
    });
  }
}

export function assertEntryId(id: string): void {
  if (typeof id !== "string" || !ENTRY_ID_RE.test(id)) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `${JSON.stringify(id)} is not a stream entry id (expected MS-SEQ)`, { details: { path: "id", id } });
  }
}

export function assertGroupName(group: string, path = "group"): void {
  if (typeof group !== "string" || group.length === 0 || group.length > 200) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `${path} must be a non-empty string of at most 200 characters`, { details: { path } });
  }
}

/** `${prefix}{role:writer}` */
export function streamKey(prefix: string, stream: string): string {
  assertKeyPrefix(prefix);
  assertStreamName(stream);
  return `${prefix}{${stream}}`;
}

/** The hash tag of a key built here (`{role:writer}`): keys with the same tag share a Redis Cluster slot. */
export function hashTagOf(key: string): string {
  const open = key.indexOf("{");
  const close = open < 0 ? -1 : key.indexOf("}", open + 1);
  // Redis hashes the whole key when there is no tag or the tag is empty.
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

/** `${prefix}{role:writer}:dead` — same hash tag as the stream. */
export function deadLetterKey(prefix: string, stream: string): string {
  return `${streamKey(prefix, stream)}:dead`;
}

/**
 * `${prefix}{role:writer}:seen:<envelopeId>` — which entry of the stream claimed an envelope (see
 * `Bus.claimEnvelopes`). It shares the stream's hash tag, like the dead-letter stream: a duplicate publication is
 * always on the same stream, one read's claims then go out as one pipeline even on a Cluster (ioredis refuses a
 * pipeline spanning slots), and the key sits in the same slot as the entries it describes. Envelope ids are
 * UUIDs; a brace in one could not move the hash tag, which is the first `{…}` of the key.
 */
export function envelopeClaimKey(prefix: string, stream: string, envelopeId: string): string {
  return `${streamKey(prefix, stream)}:seen:${envelopeId}`;
}

/**
 * `${prefix}{role:writer}:turn:<taskId>/<stepId>` — the latest turn of a step handed to the stream (bus/turn-marks.ts),
 * under the stream's hash tag so it rides in the claims' pipeline. Task ids are UUIDs the coordinator assigns, so
 * the task and step ids name one step of one tenant.
 */
export function turnMarkKey(prefix: string, stream: string, taskId: string, stepId: string): string {
  return `${streamKey(prefix, stream)}:turn:${taskId}/${stepId}`;
}

/**
 * A consumer name unique to this process: `${hostname}-${pid}-${random}`. The role is not part of the name
 * because the consumer group already is per role; it is only checked to be non-empty so callers pass it.
 */
export function consumerName(role: string): string {
  assertGroupName(role, "role");
  const host = hostname().replace(/[^A-Za-z0-9_.-]/g, "_") || "host";
  return `${host}-${process.pid}-${randomBytes(4).toString("hex")}`;
}

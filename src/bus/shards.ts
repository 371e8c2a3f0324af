/**
 * Tenant shards (issue 11). Every tenant belongs to one of a fixed number of shards, by a stable hash of its id;
 * each shard has its own coordinator inbox stream (`coordinator:<shard>`, Redis key `<prefix>{coordinator:<shard>}`,
 * so a shard's stream, dead letters and envelope claims share one Cluster slot) and is owned by exactly one
 * coordinator at a time (leases: src/store/shards/postgres-shard-store.ts). Here, on the bus floor, because every
 * sender of an envelope routes by it: the gateway, the coordinators and the harness (a worker answers into its
 * tenant's inbox).
 *
 * The hash is the first 32 bits of md5(tenant id) modulo the shard count: cheap, the same in every process, and
 * the same in Postgres (`switchyard_shard_of` in migration 0009), so SQL can select the tenants of owned shards.
 */
import { createHash } from "node:crypto";
import { COORDINATOR_STREAM } from "./bus.js";
import { EndpointKind, type Envelope } from "./codec.js";

export const DEFAULT_SHARD_COUNT = 64;

const INBOX_RE = /^coordinator:(\d{1,4})$/;

/** The shard of a tenant. */
export function shardOf(orgId: string, count: number): number {
  const digest = createHash("md5").update(orgId, "utf8").digest();
  return digest.readUInt32BE(0) % count;
}

/** The logical inbox stream of a shard: `coordinator:7`. */
export function shardInbox(shard: number): string {
  return `${COORDINATOR_STREAM}:${shard}`;
}

/** The inbox stream a tenant's RESULT, QUERY and CONTROL envelopes go to. */
export function inboxOf(orgId: string, count: number): string {
  return shardInbox(shardOf(orgId, count));
}

/** The shard of an inbox stream name, or undefined for any other stream (the legacy `coordinator` included). */
export function shardOfInbox(stream: string): number | undefined {
  const match = INBOX_RE.exec(stream);
  return match ? Number(match[1]) : undefined;
}

/** Whether a stream is a coordinator inbox: a shard's, or the shared one of releases before shards. */
export function isInboxStream(stream: string): boolean {
  return stream === COORDINATOR_STREAM || INBOX_RE.test(stream);
}

/**
 * SQL: `column` is a tenant of the owned shards; `$n` is the shard count and `$n+1` the owned shards (`shardSqlParams`).
 * Without shards (undefined) the parameters are NULL and every tenant matches.
 */
export function shardSqlClause(column: string, n: number): string {
  return `($${n}::int IS NULL OR switchyard_shard_of(${column}, $${n}::int) = ANY($${n + 1}::int[]))`;
}

export function shardSqlParams(shards: { count: number; owned: readonly number[] } | undefined): [number | null, number[] | null] {
  return shards ? [shards.count, [...shards.owned]] : [null, null];
}

/**
 * The inbox a process outside the coordinator writes a tenant's envelopes to: its shard inbox when the process
 * knows the deployment's shard count, else the shared inbox (every coordinator forwards from it, one hop more).
 */
export function inboxFor(orgId: string, shardCount: number | undefined): string {
  return shardCount === undefined ? COORDINATOR_STREAM : inboxOf(orgId, shardCount);
}

/** Every shard number, 0 … count-1. */
export function allShards(count: number): number[] {
  return Array.from({ length: count }, (_, shard) => shard);
}

/**
 * Where the answer to a coordinator's envelope goes: the inbox its `source` names (a WORK or REPLY from a sharded
 * coordinator names its tenant's shard inbox), else the shared inbox of releases before shards, which every
 * coordinator forwards to the right shard. Only a coordinator inbox can be named: an envelope cannot point a
 * harness at any other stream.
 */
export function answerInbox(incoming: Pick<Envelope, "source">): string {
  const source = incoming.source;
  if (source?.kind === EndpointKind.COORDINATOR && shardOfInbox(source.id) !== undefined) return source.id;
  return COORDINATOR_STREAM;
}

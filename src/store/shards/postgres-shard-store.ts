/**
 * Shard leases in Postgres, the source of truth for who owns which shard (issue 11): the adapter of ShardStore
 * (shard-store.ts beside it), one SQL operation per function.
 *
 * - A lease is a row of `shard_leases`: owner, fencing token, expiry. Acquiring a shard that is free, expired or
 *   released takes a new token from a sequence, so tokens only grow.
 * - Every transaction a coordinator commits for a shard first runs `checkFence`: it reads the lease rows of the
 *   batch's shards with FOR KEY SHARE and fails FENCED unless this owner still holds each with the same token.
 *   A takeover locks the row FOR UPDATE (which conflicts with KEY SHARE) and SKIPs it while any such transaction
 *   is open, so it can only move the token once the old owner's transactions have ended; afterwards the old owner's
 *   next check fails. A renewal updates a non-key column (NO KEY UPDATE), which does not wait for the checks.
 * - A paused owner (SIGSTOP) inside a transaction keeps its KEY SHARE lock: the coordinator's sessions therefore
 *   run with `idle_in_transaction_session_timeout`, so Postgres ends such a transaction and the shard can move.
 * - Members (`coordinator_members`) are the coordinators alive now; they split the shards (coordinator/shard-ownership.ts).
 */
import { ErrorCode, SwitchyardError } from "../../errors.js";
import type { Queryable } from "../db.js";
import type { LeaseRow, MemberIdentity, MemberRow, ShardStore, ShardTokens } from "./shard-store.js";

export type { LeaseRow, MemberIdentity, MemberRow, ShardTokens } from "./shard-store.js";

/**
 * Records the shard count on first use and refuses a different one later: two processes that disagree on it would
 * put a tenant's envelopes on different inboxes. Creates the lease rows.
 */
export async function recordShardCount(db: Queryable, count: number): Promise<void> {
  const { rows } = await db.query<{ shard_count: number }>(
    `WITH inserted AS (INSERT INTO shard_config (shard_count) VALUES ($1) ON CONFLICT (singleton) DO NOTHING RETURNING shard_count)
     SELECT shard_count FROM inserted UNION ALL SELECT shard_count FROM shard_config LIMIT 1`,
    [count],
  );
  const recorded = rows[0]?.shard_count;
  if (recorded !== undefined && recorded !== count) throw shardCountMismatch(count, recorded);
  await db.query("INSERT INTO shard_leases (shard) SELECT generate_series(0, $1::int - 1) ON CONFLICT (shard) DO NOTHING", [count]);
}

/**
 * For processes that write to shard inboxes without owning shards (the gateway): refuses a shard count other than
 * the recorded one, whose inboxes no coordinator would read. Nothing is recorded before a coordinator ran.
 */
export async function checkShardCount(db: Queryable, count: number): Promise<void> {
  const recorded = await readShardCount(db);
  if (recorded !== undefined && recorded !== count) throw shardCountMismatch(count, recorded);
}

function shardCountMismatch(count: number, recorded: number): SwitchyardError {
  return new SwitchyardError(
    ErrorCode.Config,
    `SWITCHYARD_SHARD_COUNT is ${count}, but this database was set up with ${recorded} shards: every process must use ${recorded} ` +
      `(changing it needs every coordinator stopped and the inboxes drained; see README, Scale-out)`,
    { details: { variable: "SWITCHYARD_SHARD_COUNT", configured: count, recorded } },
  );
}

/** The recorded shard count, or undefined before any coordinator ran. */
export async function readShardCount(db: Queryable): Promise<number | undefined> {
  const { rows } = await db.query<{ shard_count: number }>("SELECT shard_count FROM shard_config");
  return rows[0]?.shard_count;
}

/** Renews this coordinator's membership and returns the live members' ids, sorted. */
export async function heartbeatMember(db: Queryable, me: MemberIdentity, ttlMs: number): Promise<string[]> {
  const { rows } = await db.query<{ coordinator_id: string }>(
    `WITH beat AS (
       INSERT INTO coordinator_members (coordinator_id, host, pid, expires_at)
       VALUES ($1, $2, $3, clock_timestamp() + $4 * interval '1 millisecond')
       ON CONFLICT (coordinator_id) DO UPDATE SET expires_at = EXCLUDED.expires_at
       RETURNING coordinator_id
     )
     SELECT coordinator_id FROM beat
     UNION
     SELECT coordinator_id FROM coordinator_members WHERE expires_at > clock_timestamp()
     ORDER BY 1`,
    [me.coordinatorId, me.host, me.pid, ttlMs],
  );
  return rows.map((r) => r.coordinator_id);
}

/** Leaves the membership at once (graceful shutdown) and forgets members gone for a while. */
export async function leaveMembers(db: Queryable, coordinatorId: string): Promise<void> {
  await db.query("DELETE FROM coordinator_members WHERE coordinator_id = $1 OR expires_at < clock_timestamp() - interval '1 hour'", [coordinatorId]);
}

export async function listMembers(db: Queryable): Promise<MemberRow[]> {
  const { rows } = await db.query<{ coordinator_id: string; host: string; pid: number; joined_at: Date; expires_at: Date }>(
    "SELECT coordinator_id, host, pid, joined_at, expires_at FROM coordinator_members WHERE expires_at > clock_timestamp() ORDER BY coordinator_id",
  );
  return rows.map((r) => ({ coordinatorId: r.coordinator_id, host: r.host, pid: r.pid, joinedAtMs: r.joined_at.getTime(), expiresAtMs: r.expires_at.getTime() }));
}

/**
 * Takes the given shards that are free, expired, released or recorded under this owner's name, each with a NEW
 * token; shards held by another owner, or locked by a transaction that checked their old token, are left for a
 * later try. A lease under this owner's own name gets a new token too: it may be a previous process started with
 * the same `--consumer` name, paused but alive, which must not keep passing its fence (renewals of leases this
 * process holds go through `renewShards`). Returns what this owner holds now among `shards`.
 */
export async function acquireShards(db: Queryable, owner: string, shards: readonly number[], ttlMs: number): Promise<Map<number, number>> {
  if (shards.length === 0) return new Map();
  const { rows } = await db.query<{ shard: number; token: string }>(
    `WITH candidates AS (
       SELECT shard
       FROM shard_leases
       WHERE shard = ANY($1::int[]) AND (owner IS NULL OR owner = $2 OR expires_at <= clock_timestamp())
       ORDER BY shard
       FOR UPDATE SKIP LOCKED
     )
     UPDATE shard_leases AS l
     SET owner = $2,
         token = nextval('shard_lease_tokens'),
         acquired_at = clock_timestamp(),
         expires_at = clock_timestamp() + $3 * interval '1 millisecond'
     FROM candidates AS c
     WHERE l.shard = c.shard
     RETURNING l.shard, l.token`,
    [shards, owner, ttlMs],
  );
  return new Map(rows.map((r) => [r.shard, Number(r.token)]));
}

/** Extends the leases this owner still holds with these tokens; returns the shards renewed (the rest are lost). */
export async function renewShards(db: Queryable, owner: string, held: ShardTokens, ttlMs: number): Promise<Set<number>> {
  if (held.size === 0) return new Set();
  const { rows } = await db.query<{ shard: number }>(
    `UPDATE shard_leases AS l SET expires_at = clock_timestamp() + $4 * interval '1 millisecond'
     FROM unnest($1::int[], $2::bigint[]) AS h(shard, token)
     WHERE l.shard = h.shard AND l.token = h.token AND l.owner = $3
     RETURNING l.shard`,
    [[...held.keys()], [...held.values()], owner, ttlMs],
  );
  return new Set(rows.map((r) => r.shard));
}

/** Gives shards back (graceful hand-over): free at once for the next owner, who takes a new token. */
export async function releaseShards(db: Queryable, owner: string, held: ShardTokens): Promise<void> {
  if (held.size === 0) return;
  await db.query(
    `UPDATE shard_leases AS l SET owner = NULL, expires_at = '-infinity'
     FROM unnest($1::int[], $2::bigint[]) AS h(shard, token)
     WHERE l.shard = h.shard AND l.token = h.token AND l.owner = $3`,
    [[...held.keys()], [...held.values()], owner],
  );
}

export async function listLeases(db: Queryable): Promise<LeaseRow[]> {
  const { rows } = await db.query<{ shard: number; owner: string | null; token: string; expires_at: Date; live: boolean }>(
    `SELECT shard, owner, token, greatest(expires_at, 'epoch'::timestamptz) AS expires_at, owner IS NOT NULL AND expires_at > clock_timestamp() AS live
     FROM shard_leases ORDER BY shard`,
  );
  return rows.map((r) => ({ shard: r.shard, owner: r.owner, token: Number(r.token), expiresAtMs: r.expires_at.getTime(), live: r.live }));
}

/**
 * The fence: inside the caller's transaction, proves this owner still holds every shard of `held` with its token
 * and keeps the lease rows from being taken over until the transaction ends. FENCED otherwise.
 */
export async function checkFence(db: Queryable, owner: string, held: ShardTokens): Promise<void> {
  if (held.size === 0) return;
  const { rows } = await db.query<{ shard: number }>(
    `SELECT l.shard FROM shard_leases AS l
     JOIN unnest($1::int[], $2::bigint[]) AS h(shard, token) ON l.shard = h.shard AND l.token = h.token
     WHERE l.owner = $3
     FOR KEY SHARE OF l`,
    [[...held.keys()], [...held.values()], owner],
  );
  if (rows.length === held.size) return;
  const kept = new Set(rows.map((r) => r.shard));
  const lost = [...held.keys()].filter((shard) => !kept.has(shard));
  throw new SwitchyardError(ErrorCode.Fenced, `coordinator ${owner} no longer holds shard(s) ${lost.join(", ")}: its lease was taken over; nothing was committed`, {
    details: { owner, lost },
  });
}

export function createPostgresShardStore(): ShardStore {
  return { recordShardCount, checkShardCount, readShardCount, heartbeatMember, leaveMembers, listMembers, acquireShards, renewShards, releaseShards, listLeases, checkFence };
}

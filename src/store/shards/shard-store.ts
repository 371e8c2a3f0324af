/**
 * Shard leases and coordinator membership (issue 11; issue 27 §2): the port the shard ownership loop
 * (coordinator/shard-ownership.ts) takes. The Postgres adapter, the source of truth for who owns which shard, is
 * postgres-shard-store.ts beside it; every method takes the connection or transaction it runs on first (the
 * fence must run inside the transaction it guards).
 */
import type { Queryable } from "../db.js";

export interface LeaseRow {
  shard: number;
  owner: string | null;
  token: number;
  expiresAtMs: number;
  /** Whether the lease is live now (owner set, not expired), by the database's clock. */
  live: boolean;
}

export interface MemberRow {
  coordinatorId: string;
  host: string;
  pid: number;
  joinedAtMs: number;
  expiresAtMs: number;
}

export interface MemberIdentity {
  coordinatorId: string;
  host: string;
  pid: number;
}

/** Held shards and their tokens. */
export type ShardTokens = ReadonlyMap<number, number>;

/** The shards a query is limited to (`switchyard_shard_of(org_id, count) = ANY(owned)`): a coordinator's own. */
export interface ShardFilter {
  count: number;
  owned: readonly number[];
}

export interface ShardStore {
  /** Records the shard count on first use (CONFIG if a different one was recorded) and creates the lease rows. */
  recordShardCount(db: Queryable, count: number): Promise<void>;
  /** CONFIG if a shard count other than `count` was recorded; nothing is recorded before a coordinator ran. */
  checkShardCount(db: Queryable, count: number): Promise<void>;
  /** The recorded shard count, or undefined before any coordinator ran. */
  readShardCount(db: Queryable): Promise<number | undefined>;
  /** Renews this coordinator's membership and returns the live members' ids, sorted. */
  heartbeatMember(db: Queryable, me: MemberIdentity, ttlMs: number): Promise<string[]>;
  /** Leaves the membership at once (graceful shutdown) and forgets members gone for a while. */
  leaveMembers(db: Queryable, coordinatorId: string): Promise<void>;
  listMembers(db: Queryable): Promise<MemberRow[]>;
  /** Takes those of `shards` that are free, expired, released or under this owner's name, each with a new token. */
  acquireShards(db: Queryable, owner: string, shards: readonly number[], ttlMs: number): Promise<Map<number, number>>;
  /** Extends the leases this owner still holds with these tokens; returns the shards renewed (the rest are lost). */
  renewShards(db: Queryable, owner: string, held: ShardTokens, ttlMs: number): Promise<Set<number>>;
  /** Gives shards back (graceful hand-over): free at once for the next owner. */
  releaseShards(db: Queryable, owner: string, held: ShardTokens): Promise<void>;
  listLeases(db: Queryable): Promise<LeaseRow[]>;
  /**
   * The fence: inside the caller's transaction, proves this owner still holds every shard of `held` with its token
   * and keeps the lease rows from being taken over until the transaction ends. FENCED otherwise.
   */
  checkFence(db: Queryable, owner: string, held: ShardTokens): Promise<void>;
}

/**
 * Which shards this coordinator owns, kept true by a loop (issue 11):
 *
 * 1. renew its membership and read the live members;
 * 2. split the shards among them by rendezvous hashing (each shard goes to the member with the highest
 *    hash(member, shard)), so every member computes the same split and a join or leave moves only ~1/n of them;
 * 3. renew the leases it holds (a lease it could not renew was taken over: lost at once);
 * 4. hand over the shards now meant for another member: stop reading them, let the batches in flight finish
 *    (`beforeRelease`), then release the leases so the next owner can take them without waiting for expiry;
 * 5. acquire the shards meant for it that are free or expired (`onAcquired` then reads what the previous owner
 *    left unacknowledged).
 *
 * It runs every fifth of the lease TTL, so a live owner renews well before expiry, a released shard is taken
 * within one period, and a killed owner's shards within the TTL plus one period. Correctness never rests on these
 * timings: every transaction checks the fencing token (ShardStore.checkFence, store/shards/postgres-shard-store.ts).
 */
import { createHash } from "node:crypto";
import { hostname } from "node:os";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Pool, Queryable } from "../store/db.js";
import { sleep } from "../sleep.js";
import type { ShardStore } from "../store/shards/shard-store.js";
import { allShards, shardInbox, shardOf } from "../bus/shards.js";

export interface ShardOwnershipOptions {
  pool: Pool;
  /** The leases and the membership (store/shards/: Postgres is the source of truth for who owns which shard). */
  store: ShardStore;
  /** This coordinator's id: its consumer name. */
  coordinatorId: string;
  shardCount: number;
  leaseTtlMs: number;
  logger?: Logger;
  /** Told after shards were acquired, before they are read. */
  onAcquired?: (shards: readonly number[]) => Promise<void>;
  /** Told before shards are released: stop reading them and finish their batches in flight. */
  beforeRelease?: (shards: readonly number[]) => Promise<void>;
  /** Told when shards were lost without a hand-over (taken over, or a renewal came too late). */
  onLost?: (shards: readonly number[]) => void;
  /** Told whenever the set of owned shards changed. */
  onChange?: (owned: readonly number[]) => void;
  clock?: () => number;
}

/** What SQL needs to select the tenants of the shards owned now (`switchyard_shard_of(org_id, count) = ANY(owned)`). */
export interface OwnedShards {
  count: number;
  owned: readonly number[];
}

export class ShardOwnership {
  private readonly logger: Logger;
  private readonly clock: () => number;
  /** Held leases: shard → fencing token. */
  private readonly held = new Map<number, number>();
  /** Shards being handed over: still held, no longer read or swept. */
  private readonly releasing = new Set<number>();
  /** The held leases are surely valid until then (the start of the last successful renewal + TTL). */
  private validUntil = 0;
  private members: readonly string[] = [];
  private ticking: Promise<void> | undefined;
  private prepared = false;

  constructor(private readonly options: ShardOwnershipOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "shards" });
    this.clock = options.clock ?? Date.now;
  }

  get coordinatorId(): string {
    return this.options.coordinatorId;
  }

  get shardCount(): number {
    return this.options.shardCount;
  }

  get periodMs(): number {
    return Math.max(100, Math.floor(this.options.leaseTtlMs / 5));
  }

  /** The shards owned and in service now (held, valid, not being handed over), ascending. */
  owned(): number[] {
    if (this.clock() >= this.validUntil) return [];
    return [...this.held.keys()].filter((shard) => !this.releasing.has(shard)).sort((a, b) => a - b);
  }

  /** The inbox streams of `owned()`. */
  inboxes(): string[] {
    return this.owned().map(shardInbox);
  }

  ownedShards(): OwnedShards {
    return { count: this.options.shardCount, owned: this.owned() };
  }

  ownsTenant(orgId: string): boolean {
    const shard = shardOf(orgId, this.options.shardCount);
    return this.held.has(shard) && !this.releasing.has(shard) && this.clock() < this.validUntil;
  }

  /**
   * The fence for a transaction touching these tenants: FENCED at once (no round trip) if one of their shards is
   * not owned here, else the lease rows are checked and share-locked in the transaction.
   */
  async fence(db: Queryable, orgIds: Iterable<string>): Promise<void> {
    const tokens = new Map<number, number>();
    const missing = new Set<number>();
    for (const orgId of orgIds) {
      const shard = shardOf(orgId, this.options.shardCount);
      const token = this.held.get(shard);
      if (token === undefined || this.releasing.has(shard)) missing.add(shard);
      else tokens.set(shard, token);
    }
    if (missing.size > 0) {
      throw new SwitchyardError(ErrorCode.Fenced, `coordinator ${this.coordinatorId} does not own shard(s) ${[...missing].join(", ")}`, {
        details: { owner: this.coordinatorId, lost: [...missing] },
      });
    }
    try {
      await this.options.store.checkFence(db, this.coordinatorId, tokens);
    } catch (error) {
      if (error instanceof SwitchyardError && error.code === ErrorCode.Fenced) this.lose((error.details.lost as number[]) ?? []);
      throw error;
    }
  }

  /** Records the shard count (refusing a different one) and takes the first shards. */
  async prepare(): Promise<void> {
    if (this.prepared) return;
    await this.options.store.recordShardCount(this.options.pool, this.options.shardCount);
    this.prepared = true;
    await this.tick();
  }

  /** For a coordinator driven step by step (no `run` loop): prepares, or renews once half the lease has passed. */
  async refresh(): Promise<void> {
    if (!this.prepared) await this.prepare();
    else if (this.clock() >= this.validUntil - this.options.leaseTtlMs / 2) await this.tick();
  }

  /** Runs the ownership loop until the signal aborts; failures are logged and retried next period. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        if (!this.prepared) await this.prepare();
        else await this.tick();
      } catch (error) {
        this.logger.warn({ err: error }, "shard ownership round failed; retried next period");
      }
      await sleep(this.periodMs, signal);
    }
  }

  /** One round (see the file comment). Rounds never overlap. */
  tick(): Promise<void> {
    if (!this.ticking) {
      this.ticking = this.round().finally(() => {
        this.ticking = undefined;
      });
    }
    return this.ticking;
  }

  /** Hands every shard over and leaves the membership (graceful shutdown, after the inbox loop stopped). */
  async close(): Promise<void> {
    await this.ticking?.catch(() => {});
    const held = new Map(this.held);
    this.held.clear();
    this.releasing.clear();
    this.changed();
    try {
      await this.options.store.releaseShards(this.options.pool, this.coordinatorId, held);
      await this.options.store.leaveMembers(this.options.pool, this.coordinatorId);
      if (held.size > 0) this.logger.info({ shards: held.size }, "shards released for the other coordinators");
    } catch (error) {
      this.logger.warn({ err: error }, "releasing shards at shutdown failed; they move once their leases expire");
    }
  }

  /** Shards found lost (a fence failed): dropped at once; the next round settles the rest. */
  lose(shards: readonly number[]): void {
    const lost = shards.filter((shard) => this.held.delete(shard));
    if (lost.length === 0) return;
    for (const shard of lost) this.releasing.delete(shard);
    this.logger.warn({ shards: lost }, "shard leases lost (taken over by another coordinator)");
    this.options.onLost?.(lost);
    this.changed();
  }

  private async round(): Promise<void> {
    const { pool, leaseTtlMs, store } = this.options;
    const started = this.clock();
    this.members = await store.heartbeatMember(pool, { coordinatorId: this.coordinatorId, host: hostname(), pid: process.pid }, leaseTtlMs);
    const desired = new Set(assignShards(this.members, this.options.shardCount, this.coordinatorId));

    if (this.held.size > 0) {
      const renewed = await store.renewShards(pool, this.coordinatorId, this.held, leaseTtlMs);
      this.lose([...this.held.keys()].filter((shard) => !renewed.has(shard)));
    }
    this.validUntil = started + leaseTtlMs;

    const handOver = [...this.held.keys()].filter((shard) => !desired.has(shard));
    if (handOver.length > 0) await this.handOver(handOver);

    const wanted = [...desired].filter((shard) => !this.held.has(shard));
    if (wanted.length > 0) {
      const acquired = await store.acquireShards(pool, this.coordinatorId, wanted, leaseTtlMs);
      if (acquired.size > 0) {
        for (const [shard, token] of acquired) this.held.set(shard, token);
        const shards = [...acquired.keys()].sort((a, b) => a - b);
        this.logger.info({ shards, members: this.members.length }, "shards acquired");
        await this.options.onAcquired?.(shards);
        this.changed();
      }
    }
  }

  private async handOver(shards: readonly number[]): Promise<void> {
    for (const shard of shards) this.releasing.add(shard);
    this.changed();
    try {
      await this.options.beforeRelease?.(shards);
      const tokens = new Map(shards.flatMap((shard) => (this.held.has(shard) ? [[shard, this.held.get(shard)!] as const] : [])));
      await this.options.store.releaseShards(this.options.pool, this.coordinatorId, tokens);
      for (const shard of shards) this.held.delete(shard);
      this.logger.info({ shards, members: this.members.length }, "shards handed over");
    } finally {
      for (const shard of shards) this.releasing.delete(shard);
      this.changed();
    }
  }

  private changed(): void {
    this.options.onChange?.(this.owned());
  }
}

/** The shards `me` should own when `members` are live: rendezvous hashing, the same answer in every member. */
export function assignShards(members: readonly string[], shardCount: number, me: string): number[] {
  if (!members.includes(me)) return [];
  return allShards(shardCount).filter((shard) => winnerOf(members, shard) === me);
}

function winnerOf(members: readonly string[], shard: number): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const member of members) {
    const score = createHash("md5").update(`${member}\u0000${shard}`).digest().readUInt32BE(0);
    if (score > bestScore || (score === bestScore && best !== undefined && member < best)) {
      best = member;
      bestScore = score;
    }
  }
  return best;
}

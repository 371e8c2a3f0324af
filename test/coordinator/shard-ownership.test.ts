/**
 * The ownership loop (src/coordinator/shard-ownership.ts) with several coordinators on one database: the shards
 * are split without overlap, a leaving coordinator hands its shards over at once, and a silent one loses them
 * once its leases expire — and then cannot commit anything.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ErrorCode } from "../../src/errors.js";
import { createPostgresShardStore, listLeases, recordShardCount } from "../../src/store/shards/postgres-shard-store.js";
import { ShardOwnership } from "../../src/coordinator/shard-ownership.js";
import { withTransaction } from "../../src/store/db.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { waitForProgress } from "../support/wait.js";

const COUNT = 16;
const TTL = 1_000;

describe("shard ownership", () => {
  let db: TestDatabase;
  const running: Array<{ ownership: ShardOwnership; stop: AbortController; loop: Promise<void> }> = [];

  beforeEach(async () => {
    db = await createTestDatabase();
    await recordShardCount(db.pool, COUNT);
  });
  afterEach(async () => {
    for (const r of running.splice(0)) {
      r.stop.abort();
      await r.loop;
      await r.ownership.close();
    }
    await db.drop();
  });

  function start(id: string, events: string[] = []): ShardOwnership {
    const ownership = new ShardOwnership({
      pool: db.pool,
      store: createPostgresShardStore(),
      coordinatorId: id,
      shardCount: COUNT,
      leaseTtlMs: TTL,
      beforeRelease: async (shards) => void events.push(`${id} hands over ${shards.length}`),
      onAcquired: async (shards) => void events.push(`${id} acquires ${shards.length}`),
    });
    const stop = new AbortController();
    running.push({ ownership, stop, loop: ownership.run(stop.signal) });
    return ownership;
  }

  /** Waits until every shard is owned and the owners are exactly `ids`, each with a disjoint part. */
  async function settled(owners: ShardOwnership[]): Promise<Map<string, number[]>> {
    const state = await waitForProgress({
      what: `the shards to be split among ${owners.map((o) => o.coordinatorId).join(", ")}`,
      progress: async () => {
        const leases = await listLeases(db.pool);
        return { leases: leases.map((l) => (l.live ? l.owner : null)), local: owners.map((o) => o.owned()) };
      },
      done: ({ leases, local }) =>
        leases.every((owner) => owner !== null && owners.some((o) => o.coordinatorId === owner)) &&
        owners.every((o, i) => local[i]!.length > 0 && local[i]!.every((shard) => leases[shard] === o.coordinatorId)) &&
        local.flat().length === COUNT,
      stallMs: 10_000,
    });
    return new Map(owners.map((o, i) => [o.coordinatorId, state.local[i]!]));
  }

  it("splits the shards between two coordinators without overlap, and hands them over when one leaves", async () => {
    const events: string[] = [];
    const a = start("coord-a", events);
    await settled([a]);
    expect(a.owned()).toHaveLength(COUNT);
    const b = start("coord-b", events);
    const split = await settled([a, b]);
    expect([...split.values()].flat().sort((x, y) => x - y)).toEqual(Array.from({ length: COUNT }, (_, i) => i));
    expect(events).toContain(`coord-a hands over ${split.get("coord-b")!.length}`);

    // b leaves gracefully: a has everything again well before b's leases would have expired.
    const leaving = running.find((r) => r.ownership === b)!;
    leaving.stop.abort();
    await leaving.loop;
    const left = Date.now();
    await b.close();
    running.splice(running.indexOf(leaving), 1);
    await settled([a]);
    expect(Date.now() - left).toBeLessThan(TTL * 3);
  });

  it("takes the shards of a silent coordinator once its leases expire; its fence fails from then on", async () => {
    const a = start("coord-a");
    await settled([a]);
    // a stops renewing (as if paused) but keeps what it believes it holds.
    const silent = running.find((r) => r.ownership === a)!;
    silent.stop.abort();
    await silent.loop;
    running.splice(running.indexOf(silent), 1);
    const b = start("coord-b");
    await settled([b]);
    const fenced = await withTransaction(db.pool, (client) => a.fence(client, ["acme"])).catch((e: unknown) => e);
    expect(fenced).toMatchObject({ code: ErrorCode.Fenced });
    expect(a.ownsTenant("acme")).toBe(false);
    await withTransaction(db.pool, (client) => b.fence(client, ["acme", "globex"]));
  });
});

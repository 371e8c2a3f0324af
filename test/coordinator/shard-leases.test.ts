/**
 * Shard leases in Postgres (src/store/shards/postgres-shard-store.ts) and the shard hash: the fence is what keeps an
 * owner that lost its lease (paused, partitioned) from committing, so these tests drive it through real transactions.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { acquireShards, checkFence, heartbeatMember, listLeases, recordShardCount, releaseShards, renewShards } from "../../src/store/shards/postgres-shard-store.js";
import { assignShards } from "../../src/coordinator/shard-ownership.js";
import { inboxOf, shardInbox, shardOf, shardOfInbox } from "../../src/bus/shards.js";
import { withTransaction } from "../../src/store/db.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

const COUNT = 8;
const TTL = 60_000;

describe("shard leases", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await recordShardCount(db.pool, COUNT);
  });
  afterAll(async () => {
    await db.drop();
  });

  it("computes a tenant's shard the same way in Node and in Postgres", async () => {
    const tenants = ["acme", "globex", "", "ünïcødé-tenant", "a".repeat(200), ...Array.from({ length: 200 }, (_, i) => `t-${i}`)];
    for (const count of [1, 7, 64, 1024]) {
      const { rows } = await db.pool.query<{ shard: number }>("SELECT switchyard_shard_of(t, $2) AS shard FROM unnest($1::text[]) WITH ORDINALITY AS x(t, n) ORDER BY n", [tenants, count]);
      expect(rows.map((r) => r.shard)).toEqual(tenants.map((t) => shardOf(t, count)));
    }
    expect(shardOfInbox(inboxOf("acme", 64))).toBe(shardOf("acme", 64));
    expect(shardOfInbox("coordinator")).toBeUndefined();
    expect(shardOfInbox(shardInbox(63))).toBe(63);
  });

  it("refuses a shard count other than the one recorded, naming the variable", async () => {
    await recordShardCount(db.pool, COUNT); // the same count again is fine
    const error = await recordShardCount(db.pool, COUNT * 2).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SwitchyardError);
    expect((error as SwitchyardError).code).toBe(ErrorCode.Config);
    expect((error as SwitchyardError).message).toMatch(/SWITCHYARD_SHARD_COUNT is 16, but this database was set up with 8 shards/);
  });

  it("gives a shard to one owner at a time, with a new and larger token on every acquisition", async () => {
    const a = await acquireShards(db.pool, "a", [0, 1], TTL);
    expect([...a.keys()].sort()).toEqual([0, 1]);
    // Held and live: b gets nothing.
    expect((await acquireShards(db.pool, "b", [0, 1], TTL)).size).toBe(0);
    // Acquiring under the same name again (another process given the same --consumer) takes a new token: the
    // earlier holder's fence fails from then on.
    const again = await acquireShards(db.pool, "a", [0], TTL);
    expect(again.get(0)!).toBeGreaterThan(a.get(0)!);
    await expect(withTransaction(db.pool, (client) => checkFence(client, "a", new Map([[0, a.get(0)!]])))).rejects.toMatchObject({ code: ErrorCode.Fenced });
    a.set(0, again.get(0)!);
    await releaseShards(db.pool, "a", new Map([[0, a.get(0)!]]));
    const b = await acquireShards(db.pool, "b", [0, 1], TTL);
    expect([...b.keys()]).toEqual([0]);
    expect(b.get(0)!).toBeGreaterThan(Math.max(...a.values()));
    // a's renewal of the shard it released fails; the other one renews.
    expect(await renewShards(db.pool, "a", a, TTL)).toEqual(new Set([1]));
    const leases = await listLeases(db.pool);
    expect(leases.filter((l) => l.shard <= 1).map((l) => [l.shard, l.owner, l.live])).toEqual([
      [0, "b", true],
      [1, "a", true],
    ]);
    await releaseShards(db.pool, "a", new Map([[1, a.get(1)!]]));
    await releaseShards(db.pool, "b", b);
  });

  it("takes over an expired lease, and the old owner's fence then fails: nothing it writes commits", async () => {
    const old = await acquireShards(db.pool, "old", [2], 1);
    await new Promise((r) => setTimeout(r, 20));
    const taken = await acquireShards(db.pool, "new", [2], TTL);
    expect(taken.get(2)!).toBeGreaterThan(old.get(2)!);
    const write = withTransaction(db.pool, async (client) => {
      await client.query("CREATE TABLE IF NOT EXISTS fenced_writes (n int)");
      await client.query("INSERT INTO fenced_writes VALUES (1)");
      await checkFence(client, "old", old);
    });
    await expect(write).rejects.toMatchObject({ code: ErrorCode.Fenced, details: { lost: [2] } });
    expect((await db.pool.query("SELECT to_regclass('fenced_writes') AS t")).rows[0].t).toBeNull();
    // The new owner's fence holds.
    await withTransaction(db.pool, (client) => checkFence(client, "new", taken));
    await releaseShards(db.pool, "new", taken);
  });

  it("cannot take a shard over while a transaction that proved the old token is still open", async () => {
    const held = await acquireShards(db.pool, "holder", [3], 1);
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      await checkFence(client, "holder", held);
      await new Promise((r) => setTimeout(r, 20)); // the lease has expired meanwhile
      // The takeover skips the locked row rather than waiting: the open transaction may still commit.
      expect((await acquireShards(db.pool, "taker", [3], TTL)).size).toBe(0);
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    expect((await acquireShards(db.pool, "taker", [3], TTL)).size).toBe(1);
  });

  it("lists live members in id order and splits the shards among them the same way in each", async () => {
    await heartbeatMember(db.pool, { coordinatorId: "m-2", host: "h", pid: 2 }, TTL);
    const live = await heartbeatMember(db.pool, { coordinatorId: "m-1", host: "h", pid: 1 }, TTL);
    expect(live).toEqual(expect.arrayContaining(["m-1", "m-2"]));
    expect(live).toEqual([...live].sort());
    const members = ["m-1", "m-2", "m-3"];
    const split = members.map((m) => assignShards(members, 64, m));
    expect(split.flat().sort((x, y) => x - y)).toEqual(Array.from({ length: 64 }, (_, i) => i));
    for (const part of split) expect(part.length).toBeGreaterThan(8);
    // A member leaving moves only its own shards.
    const after = ["m-1", "m-3"].map((m) => assignShards(["m-1", "m-3"], 64, m));
    expect(after[0]).toEqual(expect.arrayContaining(split[0]!));
    expect(after[1]).toEqual(expect.arrayContaining(split[2]!));
    expect(assignShards(members, 64, "not-a-member")).toEqual([]);
  });
});

/**
 * Who wrote what, and who owned the shard then: test-only triggers on a test's own database that note every audit
 * row and step update with the writing session's `application_name` (a coordinator's names its consumer) and every
 * change of a shard lease's owner or token, both stamped with the server's clock. A committed write by a coordinator
 * that did not own the tenant's shard at that instant is a fencing failure. The stamps are taken inside the writing
 * transaction; that suffices because a fenced transaction holds its lease rows (KEY SHARE) until it ends and a
 * takeover cannot change a locked row, so the owner at the stamp is the owner at the commit.
 */
import type { Queryable } from "../../../src/store/db.js";

const APP_PREFIX = "switchyard-coordinator ";

export async function installWriteLog(db: Queryable): Promise<void> {
  await db.query(`
    CREATE TABLE test_write_log (id bigserial PRIMARY KEY, org_id text NOT NULL, what text NOT NULL, app text NOT NULL, at timestamptz NOT NULL);
    CREATE TABLE test_lease_log (id bigserial PRIMARY KEY, shard int NOT NULL, owner text, token bigint NOT NULL, at timestamptz NOT NULL);
    CREATE FUNCTION test_note_write() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO test_write_log (org_id, what, app, at)
      VALUES (NEW.org_id, TG_TABLE_NAME || ':' || coalesce(to_jsonb(NEW)->>'action', to_jsonb(NEW)->>'status'),
              current_setting('application_name'), clock_timestamp());
      RETURN NULL;
    END $$;
    CREATE FUNCTION test_note_lease() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO test_lease_log (shard, owner, token, at) VALUES (NEW.shard, NEW.owner, NEW.token, clock_timestamp());
      RETURN NULL;
    END $$;
    CREATE TRIGGER test_note_audit AFTER INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION test_note_write();
    CREATE TRIGGER test_note_steps AFTER UPDATE ON steps FOR EACH ROW EXECUTE FUNCTION test_note_write();
    CREATE TRIGGER test_note_lease AFTER INSERT OR UPDATE OF owner, token ON shard_leases FOR EACH ROW EXECUTE FUNCTION test_note_lease();
  `);
}

export interface ForeignWrite {
  orgId: string;
  what: string;
  writer: string;
  owner: string | null;
  at: string;
}

/** Every committed coordinator write whose tenant's shard was owned by another coordinator (or none) at the time. */
export async function writesByNonOwners(db: Queryable, shardCount: number): Promise<ForeignWrite[]> {
  const { rows } = await db.query<{ org_id: string; what: string; writer: string; owner: string | null; at: Date }>(
    `SELECT w.org_id, w.what, substr(w.app, $2::int + 1) AS writer, h.owner, w.at
     FROM test_write_log w
     LEFT JOIN LATERAL (
       SELECT owner FROM test_lease_log h WHERE h.shard = switchyard_shard_of(w.org_id, $1) AND h.at <= w.at ORDER BY h.at DESC, h.id DESC LIMIT 1
     ) h ON true
     WHERE starts_with(w.app, $3) AND h.owner IS DISTINCT FROM substr(w.app, $2::int + 1)
     ORDER BY w.at LIMIT 20`,
    [shardCount, APP_PREFIX.length, APP_PREFIX],
  );
  return rows.map((r) => ({ orgId: r.org_id, what: r.what, writer: r.writer, owner: r.owner, at: r.at.toISOString() }));
}

/** How many writes each coordinator committed for these tenants within [from, to) (server clock, ms since epoch). */
export async function writesBy(db: Queryable, orgIds: readonly string[], fromMs: number, toMs: number): Promise<Map<string, number>> {
  const { rows } = await db.query<{ writer: string; n: number }>(
    `SELECT substr(app, $4::int + 1) AS writer, count(*)::int AS n FROM test_write_log
     WHERE org_id = ANY($1) AND at >= to_timestamp($2 / 1000.0) AND at < to_timestamp($3 / 1000.0) AND starts_with(app, $5)
     GROUP BY 1`,
    [orgIds, fromMs, toMs, APP_PREFIX.length, APP_PREFIX],
  );
  return new Map(rows.map((r) => [r.writer, r.n]));
}

/** The server's clock now (ms), for windows compared with the stamps above. */
export async function serverNowMs(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ ms: string }>("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms");
  return Number(rows[0]!.ms);
}

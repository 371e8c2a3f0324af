/**
 * The Postgres adapter of echo suppression's port (echo-store.ts): one statement over `origin_replies` and
 * `connections` for a whole batch of deliveries, each lookup unnested from arrays and tagged with its item's index.
 */
import type { EchoProbe } from "../../ingest/echo-probe.js";
import type { Queryable } from "../db.js";
import type { EchoStore } from "./echo-store.js";

export function createPostgresEchoStore(): EchoStore {
  return { selfReplies: readSelfReplies };
}

export async function readSelfReplies(db: Queryable, items: ReadonlyArray<{ orgId: string; probe: EchoProbe }>, textWindowMinutes: number): Promise<boolean[]> {
  const ids: { i: number[]; org: string[]; kind: string[]; key: string[]; id: string[] } = { i: [], org: [], kind: [], key: [], id: [] };
  const texts: { i: number[]; org: string[]; display: string[]; sha: string[] } = { i: [], org: [], display: [], sha: [] };
  const bots: { i: number[]; org: string[]; bot: Array<string | null>; app: Array<string | null> } = { i: [], org: [], bot: [], app: [] };
  items.forEach(({ orgId, probe }, i) => {
    if (probe.account) {
      for (const id of probe.providerIds) {
        ids.i.push(i), ids.org.push(orgId), ids.kind.push(probe.account.kind), ids.key.push(probe.account.accountKey), ids.id.push(id);
      }
    }
    if (probe.text) texts.i.push(i), texts.org.push(orgId), texts.display.push(probe.text.addressDisplay), texts.sha.push(probe.text.textSha256);
    if (probe.slackBotId || probe.slackAppId) bots.i.push(i), bots.org.push(orgId), bots.bot.push(probe.slackBotId ?? null), bots.app.push(probe.slackAppId ?? null);
  });
  if (ids.i.length + texts.i.length + bots.i.length === 0) return items.map(() => false);
  const { rows } = await db.query<{ i: number }>(
    `SELECT p.i FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::text[]) AS p(i, org_id, kind, account_key, provider_id)
       JOIN origin_replies r ON r.org_id = p.org_id AND r.provider_id = p.provider_id AND r.state = 'sent'
       JOIN connections c ON c.id = r.connection_id AND c.kind = p.kind AND c.account_key = p.account_key
     UNION
     SELECT t.i FROM unnest($6::int[], $7::text[], $8::text[], $9::text[]) AS t(i, org_id, address_display, text_sha256)
       JOIN origin_replies r ON r.org_id = t.org_id AND r.address_display = t.address_display AND r.text_sha256 = t.text_sha256
      WHERE r.state IN ('dialing', 'sent', 'unknown') AND r.created_at > now() - make_interval(mins => $14)
     UNION
     SELECT b.i FROM unnest($10::int[], $11::text[], $12::text[], $13::text[]) AS b(i, org_id, bot_id, app_id)
       JOIN connections c ON c.org_id = b.org_id AND c.kind = 'slack' AND (c.bot_id = b.bot_id OR c.app_id = b.app_id)`,
    [ids.i, ids.org, ids.kind, ids.key, ids.id, texts.i, texts.org, texts.display, texts.sha, bots.i, bots.org, bots.bot, bots.app, textWindowMinutes],
  );
  const echoes = new Set(rows.map((r) => r.i));
  return items.map((_, i) => echoes.has(i));
}

/**
 * Echo suppression: a reply we posted comes back as a webhook, and must not become new work (a loop that would
 * post again). A delivery is our own reply when, for the endpoint's tenant (another tenant's rows say nothing):
 * - its comment id (GitHub / Gitea `comment.id`, Cairn `data.comment.id`) or Slack message `event.ts` is the
 *   provider id of one of our `sent` replies made through a connection of the SAME kind and account (forge host,
 *   Slack team, Cairn base URL): ids are only unique per account, and a self-hosted forge's small sequential ids
 *   would otherwise make a human's comment N on forge B look like our reply N on forge A;
 * - or its words hash to the `text_sha256` of one of our replies to the SAME address (`address_display`) in state
 *   `dialing`, `sent` or `unknown`, made within the last 15 minutes: the webhook can arrive before the sender has
 *   recorded the provider id (or after a crash left the row `unknown`), and starting a task then would reply again;
 * - or (Slack) `event.bot_id` / `event.app_id` is the bot or app of one of the tenant's Slack connections (learnt by
 *   the reply sender from its own posts).
 *
 * `echoProbe` (echo-probe.ts) is pure (what to look for); `EchoChecker` asks the database for many concurrent
 * deliveries in one query (a burst of comments costs one round trip, not one pool connection each).
 */
import type { Queryable } from "../store/db.js";
import { MicroBatcher } from "../store/micro-batcher.js";
import type { EchoProbe } from "./echo-probe.js";

export { echoProbe, type EchoProbe } from "./echo-probe.js";

/** How long after we created a reply an identical comment at its address counts as its echo. */
export const ECHO_TEXT_WINDOW_MINUTES = 15;

/** Which of `items` are our own replies: one query whatever the number of items. */
export async function selfReplies(db: Queryable, items: ReadonlyArray<{ orgId: string; probe: EchoProbe }>): Promise<boolean[]> {
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
    [ids.i, ids.org, ids.kind, ids.key, ids.id, texts.i, texts.org, texts.display, texts.sha, bots.i, bots.org, bots.bot, bots.app, ECHO_TEXT_WINDOW_MINUTES],
  );
  const echoes = new Set(rows.map((r) => r.i));
  return items.map((_, i) => echoes.has(i));
}

export async function isSelfReply(db: Queryable, orgId: string, probe: EchoProbe): Promise<boolean> {
  return (await selfReplies(db, [{ orgId, probe }]))[0]!;
}

/** `isSelfReply` for many deliveries at once, grouped by a MicroBatcher; one per process. */
export class EchoChecker {
  private readonly batcher: MicroBatcher<{ orgId: string; probe: EchoProbe }, boolean>;

  constructor(private readonly db: Queryable, options: { maxBatch?: number; maxInFlight?: number } = {}) {
    this.batcher = new MicroBatcher({ run: (items) => selfReplies(this.db, items), maxBatch: options.maxBatch ?? 200, maxInFlight: options.maxInFlight ?? 2 });
  }

  isSelfReply(orgId: string, probe: EchoProbe): Promise<boolean> {
    return this.batcher.submit({ orgId, probe });
  }
}

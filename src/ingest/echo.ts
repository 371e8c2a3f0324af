/**
 * Echo suppression: a reply we posted comes back as a webhook, and must not become new work (a loop that would
 * post again). A delivery is our own reply when, for the endpoint's tenant:
 * - GitHub / Gitea `issue_comment`: `comment.id` is the provider id of one of our `sent` replies;
 * - Slack: `event.bot_id` or `event.app_id` is the bot or app of one of the tenant's Slack connections (learnt by
 *   the reply sender from its own posts), or `event.ts` is the provider id (message ts) of one of our replies;
 * - Cairn: a comment event whose `data.comment.id` is the provider id of one of our replies.
 * Only the tenant's own rows count: another tenant's reply ids say nothing about this tenant's deliveries.
 *
 * `echoProbe` is pure (what to look for); `isSelfReply` asks the database; `EchoChecker` asks it for many
 * concurrent deliveries in one query (a burst of comments costs one round trip, not one pool connection each).
 */
import type { Queryable } from "../store/db.js";
import { MicroBatcher } from "../store/micro-batcher.js";
import type { IngestSource } from "./endpoint-store.js";

export interface EchoProbe {
  /** Provider ids our `sent` replies would have recorded (comment id, Slack message ts). */
  providerIds: string[];
  /** Slack bot / app ids a connection of the tenant may have learnt. */
  slackBotId?: string;
  slackAppId?: string;
}

function obj(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function idString(value: unknown): string | undefined {
  if (typeof value === "number" && Number.isSafeInteger(value)) return String(value);
  if (typeof value === "string" && value !== "" && value.length <= 200) return value;
  return undefined;
}

/** What would identify this delivery as our own reply; undefined when it cannot be one. */
export function echoProbe(source: IngestSource, event: string, body: unknown): EchoProbe | undefined {
  const root = obj(body);
  if (!root) return undefined;
  switch (source) {
    case "github":
    case "gitea": {
      if (event !== "issue_comment") return undefined;
      const id = idString(obj(root.comment)?.id);
      return id ? { providerIds: [id] } : undefined;
    }
    case "slack": {
      const inner = obj(root.event);
      if (!inner) return undefined;
      const ts = idString(inner.ts);
      const botId = idString(inner.bot_id);
      const appId = idString(inner.app_id);
      if (!ts && !botId && !appId) return undefined;
      return { providerIds: ts ? [ts] : [], ...(botId ? { slackBotId: botId } : {}), ...(appId ? { slackAppId: appId } : {}) };
    }
    case "cairn": {
      const id = idString(obj(obj(root.data)?.comment)?.id);
      return id ? { providerIds: [id] } : undefined;
    }
    case "generic":
      // Nothing we post goes to a generic source, and its body is unverified.
      return undefined;
  }
}

export async function isSelfReply(db: Queryable, orgId: string, probe: EchoProbe): Promise<boolean> {
  const { rows } = await db.query<{ echo: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM origin_replies WHERE org_id = $1 AND provider_id = ANY($2::text[]) AND state = 'sent')
         OR EXISTS (SELECT 1 FROM connections WHERE org_id = $1 AND kind = 'slack'
                      AND (($3::text IS NOT NULL AND bot_id = $3) OR ($4::text IS NOT NULL AND app_id = $4))) AS echo`,
    [orgId, probe.providerIds, probe.slackBotId ?? null, probe.slackAppId ?? null],
  );
  return rows[0]?.echo === true;
}

/** `isSelfReply` for many deliveries at once, grouped by a MicroBatcher; one per process. */
export class EchoChecker {
  private readonly batcher: MicroBatcher<{ orgId: string; probe: EchoProbe }, boolean>;

  constructor(private readonly db: Queryable, options: { maxBatch?: number; maxInFlight?: number } = {}) {
    this.batcher = new MicroBatcher({ run: (items) => this.checkBatch(items), maxBatch: options.maxBatch ?? 200, maxInFlight: options.maxInFlight ?? 2 });
  }

  isSelfReply(orgId: string, probe: EchoProbe): Promise<boolean> {
    return this.batcher.submit({ orgId, probe });
  }

  private async checkBatch(items: Array<{ orgId: string; probe: EchoProbe }>): Promise<boolean[]> {
    const pairs = items.flatMap(({ orgId, probe }) => probe.providerIds.map((id) => [orgId, id] as const));
    const slackOrgs = [...new Set(items.filter((i) => i.probe.slackBotId || i.probe.slackAppId).map((i) => i.orgId))];
    const [replies, bots] = await Promise.all([
      pairs.length === 0
        ? { rows: [] }
        : this.db.query<{ org_id: string; provider_id: string }>(
            `SELECT r.org_id, r.provider_id FROM origin_replies r
               JOIN unnest($1::text[], $2::text[]) AS p(org_id, provider_id) ON r.org_id = p.org_id AND r.provider_id = p.provider_id
              WHERE r.state = 'sent'`,
            [pairs.map((p) => p[0]), pairs.map((p) => p[1])],
          ),
      slackOrgs.length === 0
        ? { rows: [] }
        : this.db.query<{ org_id: string; bot_id: string | null; app_id: string | null }>(
            "SELECT org_id, bot_id, app_id FROM connections WHERE kind = 'slack' AND org_id = ANY($1::text[]) AND (bot_id IS NOT NULL OR app_id IS NOT NULL)",
            [slackOrgs],
          ),
    ]);
    const sent = new Set(replies.rows.map((r) => `${r.org_id}\u0000${r.provider_id}`));
    return items.map(({ orgId, probe }) => {
      if (probe.providerIds.some((id) => sent.has(`${orgId}\u0000${id}`))) return true;
      return bots.rows.some(
        (b) => b.org_id === orgId && ((probe.slackBotId !== undefined && b.bot_id === probe.slackBotId) || (probe.slackAppId !== undefined && b.app_id === probe.slackAppId)),
      );
    });
  }
}

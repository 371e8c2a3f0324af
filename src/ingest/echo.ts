/**
 * Echo suppression: a reply we posted comes back as a webhook, and must not become new work (a loop that would
 * post again). A delivery is our own reply when, for the endpoint's tenant:
 * - GitHub / Gitea `issue_comment`: `comment.id` is the provider id of one of our `sent` replies;
 * - Slack: `event.bot_id` or `event.app_id` is the bot or app of one of the tenant's Slack connections (learnt by
 *   the reply sender from its own posts), or `event.ts` is the provider id (message ts) of one of our replies;
 * - Cairn: a comment event whose `data.comment.id` is the provider id of one of our replies.
 * Only the tenant's own rows count: another tenant's reply ids say nothing about this tenant's deliveries.
 *
 * `echoProbe` is pure (what to look for); `isSelfReply` asks the database.
 */
import type { Queryable } from "../store/db.js";
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

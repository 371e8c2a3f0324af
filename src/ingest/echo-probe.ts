/**
 * What would identify a delivery as our own reply coming back (see echo.ts). Pure: it reads only the verified body.
 *
 * - `account`: the connection kind and account key the delivery belongs to (forge host, Slack team, Cairn base
 *   URL). Provider ids are only unique per account: a self-hosted forge numbers comments 1, 2, 3…, so comment 7 on
 *   forge B says nothing about our reply 7 on forge A. No account → no provider-id match.
 * - `providerIds`: comment id / Slack message ts our `sent` reply would have recorded.
 * - `text`: the address the delivery itself yields (displayAddress) and the sha256 of the comment's words, hashed
 *   exactly as decide-reply hashes `origin_replies.text_sha256` (sha256 hex of the UTF-8 text). This catches the
 *   echo that arrives while our reply is still `dialing` (or ended `unknown`): no provider id is recorded yet.
 * - Slack `bot_id` / `app_id` a connection of the tenant may have learnt.
 */
import { sha256Hex } from "../coordinator/envelopes.js";
import { accountKeyOf, canonicalBaseUrl, connectionKindOf, displayAddress, type ConnectionKind } from "../core/reply-address.js";
import type { IngestSource } from "./endpoint-store.js";
import { deriveReplyAddress } from "./reply-address-parsers.js";

export interface EchoProbe {
  account?: { kind: ConnectionKind; accountKey: string };
  providerIds: string[];
  text?: { addressDisplay: string; textSha256: string };
  slackBotId?: string;
  slackAppId?: string;
}

type Json = Record<string, unknown>;

function obj(value: unknown): Json | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}

function idString(value: unknown): string | undefined {
  if (typeof value === "number" && Number.isSafeInteger(value)) return String(value);
  if (typeof value === "string" && value !== "" && value.length <= 200) return value;
  return undefined;
}

/** The account of a delivery that yields no address (a Cairn comment event, a Slack bot_message). */
function accountOf(source: "github" | "gitea" | "slack" | "cairn", root: Json): EchoProbe["account"] {
  try {
    switch (source) {
      case "github":
      case "gitea": {
        const url = obj(root.repository)?.html_url;
        return typeof url === "string" ? { kind: source, accountKey: new URL(url).host.toLowerCase() } : undefined;
      }
      case "slack":
        return typeof root.team_id === "string" && root.team_id !== "" ? { kind: "slack", accountKey: root.team_id } : undefined;
      case "cairn": {
        const base = typeof root.instance === "string" ? canonicalBaseUrl(new URL(root.instance).origin) : undefined;
        return base ? { kind: "cairn", accountKey: base } : undefined;
      }
    }
  } catch {
    return undefined;
  }
}

/** What would identify this delivery as our own reply; undefined when it cannot be one. */
export function echoProbe(source: IngestSource, event: string, body: unknown): EchoProbe | undefined {
  const root = obj(body);
  // Nothing we post goes to a generic source, and its body is unverified.
  if (!root || source === "generic") return undefined;
  let providerIds: string[] = [];
  let words: unknown;
  let bot: Pick<EchoProbe, "slackBotId" | "slackAppId"> = {};
  switch (source) {
    case "github":
    case "gitea": {
      if (event !== "issue_comment") return undefined;
      const comment = obj(root.comment);
      const id = idString(comment?.id);
      providerIds = id ? [id] : [];
      words = comment?.body;
      break;
    }
    case "slack": {
      const inner = obj(root.event);
      if (!inner) return undefined;
      const ts = idString(inner.ts);
      const botId = idString(inner.bot_id);
      const appId = idString(inner.app_id);
      providerIds = ts ? [ts] : [];
      bot = { ...(botId ? { slackBotId: botId } : {}), ...(appId ? { slackAppId: appId } : {}) };
      words = inner.text;
      break;
    }
    case "cairn": {
      const comment = obj(obj(root.data)?.comment);
      const id = idString(comment?.id);
      providerIds = id ? [id] : [];
      words = comment?.body;
      break;
    }
  }
  const address = deriveReplyAddress(source, event, root);
  const account = address ? { kind: connectionKindOf(address), accountKey: accountKeyOf(address) } : accountOf(source, root);
  const text = address && typeof words === "string" ? { addressDisplay: displayAddress(address), textSha256: sha256Hex(words) } : undefined;
  if (!account) providerIds = [];
  if (providerIds.length === 0 && !text && !bot.slackBotId && !bot.slackAppId) return undefined;
  return { ...(account ? { account } : {}), providerIds, ...(text ? { text } : {}), ...bot };
}

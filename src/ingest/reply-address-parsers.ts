/**
 * The reply address of a VERIFIED delivery: a pure parser per provider. The delivery chose the place; nothing a
 * worker says later can change it (tasks.reply_to is immutable).
 *
 * | source        | events                                                             | address                                   |
 * | github, gitea | issues, issue_comment, pull_request, pull_request_review,          | forge_comment {forge, host of             |
 * |               | pull_request_review_comment                                        | repository.html_url, full_name, number}   |
 * | slack         | event_callback with a plain `message` (or `thread_broadcast`) or   | slack_thread {team_id, event.channel,     |
 * |               | `app_mention`                                                      | event.thread_ts ?? event.ts}              |
 * | cairn         | `artifact.*`                                                       | cairn_comment {origin of instance, id}    |
 * | any           | any other event                                                    | none                                      |
 * | generic       | all, even with forge headers and a forge body                      | none: its body is unverified, and an      |
 * |               |                                                                    | unverified body must never choose where   |
 * |               |                                                                    | a credential is spent                     |
 *
 * The Cairn payload accepted (Standard Webhooks envelope):
 *   { "type": "artifact.created", "timestamp": "…", "instance": "https://cairn.example",
 *     "data": { "artifact": { "id": "art_123", … } } }
 * `instance` is the Cairn instance's base URL (its origin is kept, lower case); `data.artifact.id` the artifact.
 * Comment events carry `data.comment.id` (see echo.ts) and yield no address unless their type starts `artifact.`.
 *
 * Every part is checked by `tryAddress` (src/core/reply-address.ts): anything off-charset yields no address.
 */
import { canonicalBaseUrl, tryAddress, type ReplyAddress } from "../core/reply-address.js";
import type { IngestSource } from "./endpoint-store.js";

const FORGE_EVENTS = new Set(["issues", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment"]);

type Json = Record<string, unknown>;

function obj(value: unknown): Json | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}

export function deriveReplyAddress(source: IngestSource, event: string, body: unknown): ReplyAddress | null {
  const root = obj(body);
  if (!root) return null;
  switch (source) {
    case "github":
    case "gitea":
      return FORGE_EVENTS.has(event) ? forgeAddress(source, root) : null;
    case "slack":
      return slackAddress(root);
    case "cairn":
      return event.startsWith("artifact.") ? cairnAddress(root) : null;
    case "generic":
      return null;
  }
}

function forgeAddress(forge: "github" | "gitea", root: Json): ReplyAddress | null {
  const repository = obj(root.repository);
  if (!repository || typeof repository.html_url !== "string") return null;
  let host: string;
  try {
    host = new URL(repository.html_url).host.toLowerCase();
  } catch {
    return null;
  }
  const number = obj(root.issue)?.number ?? obj(root.pull_request)?.number ?? root.number;
  return tryAddress({ kind: "forge_comment", forge, host, repository: repository.full_name, number }) ?? null;
}

function slackAddress(root: Json): ReplyAddress | null {
  if (root.type !== "event_callback") return null;
  const event = obj(root.event);
  if (!event) return null;
  const plainMessage = event.type === "message" && (event.subtype === undefined || event.subtype === "thread_broadcast");
  if (!plainMessage && event.type !== "app_mention") return null;
  const threadTs = typeof event.thread_ts === "string" ? event.thread_ts : event.ts;
  return tryAddress({ kind: "slack_thread", teamId: root.team_id, channel: event.channel, threadTs }) ?? null;
}

function cairnAddress(root: Json): ReplyAddress | null {
  if (typeof root.instance !== "string") return null;
  let origin: string;
  try {
    const url = new URL(root.instance);
    if (url.username || url.password) return null;
    origin = url.origin;
  } catch {
    return null;
  }
  const baseUrl = canonicalBaseUrl(origin);
  const artifactId = obj(obj(root.data)?.artifact)?.id;
  return baseUrl ? (tryAddress({ kind: "cairn_comment", baseUrl, artifactId }) ?? null) : null;
}

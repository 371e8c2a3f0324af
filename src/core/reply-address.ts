/**
 * A task's reply address: where an answer to the conversation the work came from may be posted. Derived at ingest
 * from a VERIFIED delivery body (src/ingest/), stored on the task row and immutable afterwards. The delivery chose
 * the place, the tenant's connection (src/vault/) chooses the credential, the worker chooses only the words.
 *
 * Each part of an address ends up as a path component of a provider request, so each is checked against a strict
 * charset here, once, both when an address is derived and when a stored one is read back.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";

export type ConnectionKind = "github" | "gitea" | "slack" | "cairn";
export const CONNECTION_KINDS: readonly ConnectionKind[] = ["github", "gitea", "slack", "cairn"];

export type ReplyAddress =
  /** An issue or pull-request conversation on a forge. `host` is the forge's web host (`github.com`, a GHE or Gitea host). */
  | { kind: "forge_comment"; forge: "github" | "gitea"; host: string; repository: string; number: number }
  /** A Slack thread: `threadTs` is the event's `thread_ts`, else its own `ts`. */
  | { kind: "slack_thread"; teamId: string; channel: string; threadTs: string }
  /** A Cairn artifact; `baseUrl` is the instance's origin (`https://cairn.example`). */
  | { kind: "cairn_comment"; baseUrl: string; artifactId: string };

export type ReplyAddressKind = ReplyAddress["kind"];

/** What a caller may see of an address: its kind and a display string. Never a credential. */
export interface ReplyAddressView {
  kind: ReplyAddressKind;
  display: string;
}

const HOST = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*(?::[0-9]{1,5})?$/;
/** `owner/name`: GitHub and Gitea allow letters, digits, `-`, `_` and `.` in both (never `..`, never a leading dot). */
const REPOSITORY = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}\/[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}$/;
const SLACK_ID = /^[A-Z0-9]{2,32}$/;
const SLACK_TS = /^[0-9]{1,12}\.[0-9]{1,9}$/;
const CAIRN_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** The connection kind that may answer an address. */
export function connectionKindOf(address: ReplyAddress): ConnectionKind {
  switch (address.kind) {
    case "forge_comment":
      return address.forge;
    case "slack_thread":
      return "slack";
    case "cairn_comment":
      return "cairn";
  }
}

/** The account key a connection must have to answer an address (exact match; see connections.account_key). */
export function accountKeyOf(address: ReplyAddress): string {
  switch (address.kind) {
    case "forge_comment":
      return address.host;
    case "slack_thread":
      return address.teamId;
    case "cairn_comment":
      return address.baseUrl;
  }
}

/** What a connection's `targets` allowlist is matched against: `owner/name`, the channel id, the artifact id. */
export function targetOf(address: ReplyAddress): string {
  switch (address.kind) {
    case "forge_comment":
      return address.repository;
    case "slack_thread":
      return address.channel;
    case "cairn_comment":
      return address.artifactId;
  }
}

export function displayAddress(address: ReplyAddress): string {
  switch (address.kind) {
    case "forge_comment":
      return `${address.host}/${address.repository}#${address.number}`;
    case "slack_thread":
      return `slack ${address.teamId} ${address.channel} thread ${address.threadTs}`;
    case "cairn_comment":
      return `${address.baseUrl}/artifacts/${address.artifactId}`;
  }
}

export function viewAddress(address: ReplyAddress | null): ReplyAddressView | null {
  return address ? { kind: address.kind, display: displayAddress(address) } : null;
}

/** A Cairn base URL in its one canonical form (`https://host[:port]`, lower case, no path), or undefined. */
export function canonicalBaseUrl(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return undefined;
  if (url.username || url.password || (url.pathname !== "/" && url.pathname !== "") || url.search || url.hash) return undefined;
  return url.origin.toLowerCase();
}

/**
 * Checks every part of an address (e.g. one read back from a task row) and returns it, or throws INVALID_ARGUMENT
 * naming the part. A stored address that fails here is never dialed.
 */
export function validateAddress(value: unknown): ReplyAddress {
  const fail = (why: string): never => {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `not a reply address: ${why}`, { details: { reason: "INVALID_REPLY_ADDRESS" } });
  };
  if (typeof value !== "object" || value === null) return fail("not an object");
  const a = value as Record<string, unknown>;
  const text = (name: string, pattern: RegExp): string => {
    const v = a[name];
    if (typeof v !== "string" || !pattern.test(v)) fail(`${name} ${JSON.stringify(v)} is not valid`);
    return v as string;
  };
  switch (a.kind) {
    case "forge_comment": {
      if (a.forge !== "github" && a.forge !== "gitea") return fail(`forge ${JSON.stringify(a.forge)} is not github or gitea`);
      const repository = text("repository", REPOSITORY);
      if (repository.includes("..")) fail("repository contains ..");
      const number = a.number;
      if (typeof number !== "number" || !Number.isSafeInteger(number) || number < 1) return fail(`number ${JSON.stringify(number)} is not a positive integer`);
      return { kind: "forge_comment", forge: a.forge, host: text("host", HOST), repository, number };
    }
    case "slack_thread":
      return { kind: "slack_thread", teamId: text("teamId", SLACK_ID), channel: text("channel", SLACK_ID), threadTs: text("threadTs", SLACK_TS) };
    case "cairn_comment": {
      const baseUrl = a.baseUrl;
      if (typeof baseUrl !== "string" || canonicalBaseUrl(baseUrl) !== baseUrl) return fail(`baseUrl ${JSON.stringify(baseUrl)} is not a canonical origin`);
      return { kind: "cairn_comment", baseUrl, artifactId: text("artifactId", CAIRN_ID) };
    }
    default:
      return fail(`kind ${JSON.stringify(a.kind)} is unknown`);
  }
}

/** Like `validateAddress`, but undefined instead of an error: for parsers of untrusted (if verified) bodies. */
export function tryAddress(value: unknown): ReplyAddress | undefined {
  try {
    return validateAddress(value);
  } catch {
    return undefined;
  }
}

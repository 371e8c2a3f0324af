/**
 * Validation and normalisation of what a tenant gives when adding a connection. Pure: the store calls it before
 * touching the database, so every problem is reported at once with its field path, and nothing here ever echoes
 * the secret (a problem with it says what is wrong, never what it was).
 *
 * The account key is normalised to the exact form reply addresses carry (src/core/reply-address.ts), because
 * selection compares the two with `=`: a forge host lower case with its port, a Slack team id upper case, a Cairn
 * base URL in `canonicalBaseUrl` form.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import { canonicalBaseUrl, CONNECTION_KINDS, type ConnectionKind } from "../core/reply-address.js";

export interface ConnectionInput {
  kind: string;
  accountKey: string;
  /** Empty or absent: the kind's default for the account (see `defaultApiBaseUrl`). */
  apiBaseUrl?: string;
  targets?: readonly string[];
  secret: string;
}

export interface NormalisedConnection {
  kind: ConnectionKind;
  accountKey: string;
  apiBaseUrl: string;
  targets: string[];
}

export interface Problem {
  path: string;
  reason: string;
}

// Same shape reply-address.ts accepts for a host: lower-case labels, optional port.
const HOST = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*(?::[0-9]{1,5})?$/;
const SLACK_TEAM = /^T[A-Z0-9]{1,31}$/;
const SLACK_CHANNEL = /^[A-Z0-9]{2,32}$/;
/** One side of `owner/name` with `*` wildcards: the charset of a repository part. */
const REPO_PART_GLOB = /^[A-Za-z0-9_.*-]{1,100}$/;
const CAIRN_ID_GLOB = /^[A-Za-z0-9_*-]{1,128}$/;
const MAX_TARGETS = 100;
const MAX_URL_CHARS = 2048;
export const MAX_SECRET_CHARS = 8192;

/** The API base URL a connection uses when the tenant names none. */
export function defaultApiBaseUrl(kind: ConnectionKind, accountKey: string): string {
  switch (kind) {
    case "github":
      return accountKey === "github.com" ? "https://api.github.com" : `https://${accountKey}/api/v3`;
    case "gitea":
      return `https://${accountKey}/api/v1`;
    case "slack":
      return "https://slack.com/api";
    case "cairn":
      return accountKey;
  }
}

export function isConnectionKind(value: unknown): value is ConnectionKind {
  return typeof value === "string" && (CONNECTION_KINDS as readonly string[]).includes(value);
}

/** The account key in the form addresses carry, or a reason it cannot be one. */
export function normaliseAccountKey(kind: ConnectionKind, raw: string): { key: string } | { problem: string } {
  const text = typeof raw === "string" ? raw.trim() : "";
  if (text === "") return { problem: "is required" };
  switch (kind) {
    case "github":
    case "gitea": {
      // `https://git.example` is accepted for the host it names; anything more (a path) is not an account.
      let host = text.toLowerCase();
      if (host.includes("://")) {
        const origin = canonicalBaseUrl(text);
        if (!origin) return { problem: `must be the forge's host (e.g. github.com, git.example:3000), got ${JSON.stringify(text)}` };
        host = new URL(origin).host;
      }
      if (!HOST.test(host)) return { problem: `must be the forge's host (e.g. github.com, git.example:3000), got ${JSON.stringify(text)}` };
      return { key: host };
    }
    case "slack": {
      const team = text.toUpperCase();
      if (!SLACK_TEAM.test(team)) return { problem: `must be the Slack team id (T followed by letters and digits, e.g. T0123ABCD), got ${JSON.stringify(text)}` };
      return { key: team };
    }
    case "cairn": {
      const origin = canonicalBaseUrl(text);
      if (!origin) return { problem: `must be the Cairn instance's base URL (http(s)://host[:port], no path, query or credentials), got ${JSON.stringify(text)}` };
      return { key: origin };
    }
  }
}

/** An explicit API base URL: http(s), no credentials, query or fragment; stored without a trailing slash. */
export function normaliseApiBaseUrl(raw: string): { url: string } | { problem: string } {
  if (raw.length > MAX_URL_CHARS) return { problem: `must be at most ${MAX_URL_CHARS} characters` };
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    return { problem: `is not a URL: ${JSON.stringify(raw)}` };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return { problem: `must be an http or https URL, got ${url.protocol}` };
  // Credentials in the URL would be a second, unsealed secret; a query or fragment has no place in a base.
  if (url.username || url.password) return { problem: "must not carry credentials; the secret is given separately (--secret-stdin)" };
  if (url.search || raw.includes("?")) return { problem: "must not have a ?query" };
  if (url.hash || raw.includes("#")) return { problem: "must not have a #fragment" };
  return { url: `${url.origin}${url.pathname.replace(/\/+$/, "")}` };
}

/** One allowlist entry of a kind in its stored form, or a reason. */
export function normaliseTarget(kind: ConnectionKind, raw: string): { target: string } | { problem: string } {
  const text = typeof raw === "string" ? raw.trim() : "";
  switch (kind) {
    case "github":
    case "gitea": {
      if (text === "*") return { target: text };
      const parts = text.split("/");
      if (parts.length !== 2 || !parts.every((p) => REPO_PART_GLOB.test(p)) || text.includes("..")) {
        return { problem: `must be a repository or glob: owner/name, owner/*, * (got ${JSON.stringify(text)})` };
      }
      return { target: text };
    }
    case "slack": {
      const channel = text.toUpperCase();
      if (!SLACK_CHANNEL.test(channel)) return { problem: `must be a Slack channel id (e.g. C0123ABCD), got ${JSON.stringify(text)}` };
      return { target: channel };
    }
    case "cairn":
      if (!CAIRN_ID_GLOB.test(text)) return { problem: `must be an artifact id or glob (letters, digits, _, -, *), got ${JSON.stringify(text)}` };
      return { target: text };
  }
}

/** Why a secret cannot be stored; never quotes it. */
export function secretProblem(secret: unknown): string | undefined {
  if (typeof secret !== "string" || secret === "") return "is required and must not be empty";
  if (secret.length > MAX_SECRET_CHARS) return `must be at most ${MAX_SECRET_CHARS} characters`;
  // It ends up in an HTTP header: a line break or control character there would split or corrupt the request.
  if (/[\u0000-\u001f\u007f]/.test(secret)) return "must not contain line breaks or control characters";
  if (secret.trim() !== secret) return "must not start or end with whitespace";
  return undefined;
}

/** Normalises the targets of a kind; duplicates after normalisation are dropped. */
export function normaliseTargets(kind: ConnectionKind, targets: readonly string[], add: (path: string, reason: string) => void): string[] {
  if (!Array.isArray(targets)) {
    add("targets", "must be a list");
    return [];
  }
  if (targets.length > MAX_TARGETS) add("targets", `at most ${MAX_TARGETS} entries`);
  const out: string[] = [];
  targets.forEach((raw, i) => {
    const result = normaliseTarget(kind, raw);
    if ("problem" in result) add(`targets[${i}]`, result.problem);
    else if (!out.includes(result.target)) out.push(result.target);
  });
  return out;
}

/** Everything but the secret, normalised; INVALID_ARGUMENT listing every problem (the secret's included). */
export function normaliseConnectionInput(input: ConnectionInput): NormalisedConnection {
  const problems: Problem[] = [];
  const add = (path: string, reason: string) => problems.push({ path, reason });
  const secret = secretProblem(input.secret);
  if (!isConnectionKind(input.kind)) {
    add("kind", `must be one of ${CONNECTION_KINDS.join(", ")}, got ${JSON.stringify(input.kind)}`);
    if (secret) add("secret", secret);
    throw invalidConnection(problems);
  }
  const kind = input.kind;
  const account = normaliseAccountKey(kind, input.accountKey);
  if ("problem" in account) add("account_key", account.problem);
  let apiBaseUrl = "";
  if (input.apiBaseUrl !== undefined && input.apiBaseUrl.trim() !== "") {
    const url = normaliseApiBaseUrl(input.apiBaseUrl);
    if ("problem" in url) add("api_base_url", url.problem);
    else apiBaseUrl = url.url;
  } else if ("key" in account) {
    apiBaseUrl = defaultApiBaseUrl(kind, account.key);
  }
  const targets = normaliseTargets(kind, input.targets ?? [], add);
  if (secret) add("secret", secret);
  if (problems.length > 0) throw invalidConnection(problems);
  return { kind, accountKey: (account as { key: string }).key, apiBaseUrl, targets };
}

export function invalidConnection(problems: Problem[]): SwitchyardError {
  const first = problems[0]!;
  const message = problems.length === 1 ? `${first.path}: ${first.reason}` : `${problems.length} problems: ${problems.map((p) => `${p.path}: ${p.reason}`).join("; ")}`;
  return new SwitchyardError(ErrorCode.InvalidArgument, message, { details: { path: first.path, reason: first.reason, errors: problems } });
}

/**
 * Loopback stand-ins for the providers an origin reply posts to — GitHub, Gitea, Slack and Cairn — speaking their
 * request and response shapes (paths, auth headers, status codes, bodies), for the demo and the tests. Each records
 * every request it receives (method, path, headers including authorization, body), checks the token when one is
 * set, and can be told how to misbehave for the next posts: 429 with Retry-After, 5xx, 401, hang after reading the
 * request, close the socket.
 *
 * No test framework is imported here: the demo (src/devtools/demo) runs these too.
 */
import { randomInt } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export type StubProviderKind = "github" | "gitea" | "slack" | "cairn";

/** What the stub does with the next post (a comment / message creation; Slack's getPermalink always answers). */
export type StubBehaviour =
  | { type: "ok" }
  /** 429 with `Retry-After: retryAfter` (seconds, or an HTTP date). */
  | { type: "rate_limit"; retryAfter: string }
  /** Any status with the provider's error body shape (`{ message }`, Slack `{ ok:false, error }`, Cairn `{ error }`). */
  | { type: "status"; status: number; error?: string; headers?: Record<string, string> }
  /** Slack's HTTP 200 with `ok: false`. */
  | { type: "slack_error"; error: string }
  /** Reads the whole request, then never answers (the client times out after the request was written). */
  | { type: "hang" }
  /** Reads the whole request, then destroys the socket (a reset mid-response). */
  | { type: "close" };

export interface RecordedRequest {
  method: string;
  /** Path and query as received. */
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
  /** When the request was fully received (ms since the epoch). */
  at: number;
}

/** A comment or message the stub created (what a forge would now show, and could send back as a webhook). */
export interface CreatedPost {
  id: string;
  /** Issue/PR number, artifact id or `channel thread_ts`. */
  target: string;
  repository?: string;
  text: string;
  permalink: string;
}

export interface ProviderStub {
  kind: StubProviderKind;
  /** `http://127.0.0.1:PORT`. */
  origin: string;
  /** What a connection's api_base_url is for this provider: GitHub and Cairn at the origin, Gitea `/api/v1`, Slack `/api`. */
  apiBaseUrl: string;
  requests: RecordedRequest[];
  created: CreatedPost[];
  /** Behaviours for the next posts, in order; then `ok`. */
  enqueue(...behaviours: StubBehaviour[]): void;
  close(): Promise<void>;
}

export interface ProviderStubOptions {
  /** The token the stub accepts; any other answers 401 as the provider would. @defaultValue any token */
  token?: string;
  /** Slack: the bot identity reported on posted messages. */
  botId?: string;
  appId?: string;
  /** Slack: the workspace id (for permalinks). @defaultValue T0STUB */
  teamId?: string;
  /** Slack: chat.getPermalink answers `ok: false` with this error. */
  permalinkError?: string;
  host?: string;
  /** Awaited before each answer is sent (tests look at what the caller recorded while its request is in flight). */
  beforeAnswer?: (request: RecordedRequest) => Promise<void>;
}

interface StubContext {
  kind: StubProviderKind;
  origin: string;
  options: ProviderStubOptions;
  created: CreatedPost[];
  nextId: () => number;
}

type Answer = { status: number; body: unknown; headers?: Record<string, string> };

export async function startProviderStub(kind: StubProviderKind, options: ProviderStubOptions = {}): Promise<ProviderStub> {
  const host = options.host ?? "127.0.0.1";
  const requests: RecordedRequest[] = [];
  const created: CreatedPost[] = [];
  const queue: StubBehaviour[] = [];
  const sockets = new Set<Socket>();
  let id = randomInt(1_000_000, 9_000_000);
  const context: StubContext = { kind, origin: "", options, created, nextId: () => ++id };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const recorded: RecordedRequest = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body, at: Date.now() };
      requests.push(recorded);
      const behaviour = req.method === "POST" ? (queue.shift() ?? { type: "ok" }) : { type: "ok" as const };
      if (behaviour.type === "hang") return;
      if (behaviour.type === "close") {
        req.socket.destroy();
        return;
      }
      const respond = () => send(res, answer(context, req, body, behaviour));
      if (options.beforeAnswer) void options.beforeAnswer(recorded).catch(() => undefined).then(respond);
      else respond();
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  context.origin = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  const prefix = kind === "gitea" ? "/api/v1" : kind === "slack" ? "/api" : "";
  return {
    kind,
    origin: context.origin,
    apiBaseUrl: `${context.origin}${prefix}`,
    requests,
    created,
    enqueue: (...behaviours) => void queue.push(...behaviours),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function send(res: ServerResponse, a: Answer): void {
  const payload = JSON.stringify(a.body);
  res.writeHead(a.status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(payload), ...a.headers });
  res.end(payload);
}

function answer(ctx: StubContext, req: IncomingMessage, body: string, behaviour: StubBehaviour): Answer {
  if (behaviour.type === "rate_limit") {
    const error = ctx.kind === "slack" ? { ok: false, error: "ratelimited" } : errorBody(ctx.kind, "API rate limit exceeded");
    return { status: 429, body: error, headers: { "retry-after": behaviour.retryAfter } };
  }
  if (behaviour.type === "status") return { status: behaviour.status, body: errorBody(ctx.kind, behaviour.error ?? "stub failure"), ...(behaviour.headers ? { headers: behaviour.headers } : {}) };
  if (!authorized(ctx, req.headers.authorization)) {
    return ctx.kind === "slack" ? { status: 200, body: { ok: false, error: "invalid_auth" } } : { status: 401, body: errorBody(ctx.kind, "Bad credentials") };
  }
  if (behaviour.type === "slack_error") return { status: 200, body: { ok: false, error: behaviour.error } };
  const url = new URL(req.url ?? "/", ctx.origin);
  switch (ctx.kind) {
    case "github":
    case "gitea":
      return forge(ctx, req.method ?? "", url, body);
    case "slack":
      return slack(ctx, req.method ?? "", url, body);
    case "cairn":
      return cairn(ctx, req.method ?? "", url, body);
  }
}

function errorBody(kind: StubProviderKind, message: string): unknown {
  if (kind === "github") return { message, documentation_url: "https://docs.github.com/rest", status: "401" };
  if (kind === "gitea") return { message, url: "https://gitea.example/api/swagger" };
  if (kind === "slack") return { ok: false, error: message.toLowerCase().replace(/\W+/g, "_") };
  return { error: message };
}

function authorized(ctx: StubContext, header: string | undefined): boolean {
  const token = ctx.options.token;
  if (token === undefined) return header !== undefined && header !== "";
  // GitHub takes `token X` and `Bearer X`; Gitea `token X`; Slack and Cairn `Bearer X`.
  const accepted = ctx.kind === "github" ? [`token ${token}`, `Bearer ${token}`] : ctx.kind === "gitea" ? [`token ${token}`] : [`Bearer ${token}`];
  return header !== undefined && accepted.includes(header);
}

function parseJson(body: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(body) as unknown;
    return typeof v === "object" && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function forge(ctx: StubContext, method: string, url: URL, raw: string): Answer {
  const prefix = ctx.kind === "gitea" ? "/api/v1" : "";
  const match = new RegExp(`^${prefix}/repos/([^/]+)/([^/]+)/issues/(\\d+)/comments$`).exec(url.pathname);
  const body = parseJson(raw);
  if (method !== "POST" || !match) return { status: 404, body: errorBody(ctx.kind, "Not Found") };
  if (typeof body?.body !== "string" || body.body === "") return { status: 422, body: errorBody(ctx.kind, "Validation Failed: body is missing") };
  const [owner, repo, number] = [decodeURIComponent(match[1]!), decodeURIComponent(match[2]!), match[3]!];
  const id = ctx.nextId();
  const now = new Date().toISOString();
  const htmlUrl = `${ctx.origin}/${owner}/${repo}/issues/${number}#issuecomment-${id}`;
  ctx.created.push({ id: String(id), target: number, repository: `${owner}/${repo}`, text: body.body, permalink: htmlUrl });
  const user = { id: 41898282, login: ctx.kind === "github" ? "switchyard[bot]" : "switchyard-bot", type: "Bot" };
  const common = { id, html_url: htmlUrl, body: body.body, user, created_at: now, updated_at: now };
  return ctx.kind === "github"
    ? {
        status: 201,
        body: {
          ...common,
          node_id: `IC_kwDO${id}`,
          url: `${ctx.origin}/repos/${owner}/${repo}/issues/comments/${id}`,
          issue_url: `${ctx.origin}/repos/${owner}/${repo}/issues/${number}`,
          author_association: "NONE",
        },
      }
    : { status: 201, body: { ...common, pull_request_url: "", issue_url: `${ctx.origin}/${owner}/${repo}/issues/${number}`, original_author: "", original_author_id: 0, assets: [] } };
}

function slack(ctx: StubContext, method: string, url: URL, raw: string): Answer {
  const team = ctx.options.teamId ?? "T0STUB";
  if (url.pathname === "/api/chat.getPermalink") {
    if (ctx.options.permalinkError) return { status: 200, body: { ok: false, error: ctx.options.permalinkError } };
    const channel = url.searchParams.get("channel");
    const ts = url.searchParams.get("message_ts");
    if (!channel || !ts) return { status: 200, body: { ok: false, error: "invalid_arguments" } };
    return { status: 200, body: { ok: true, channel, permalink: `https://${team.toLowerCase()}.slack.com/archives/${channel}/p${ts.replace(".", "")}` } };
  }
  if (method !== "POST" || url.pathname !== "/api/chat.postMessage") return { status: 404, body: { ok: false, error: "unknown_method" } };
  const body = parseJson(raw);
  if (!body || typeof body.channel !== "string") return { status: 200, body: { ok: false, error: "channel_not_found" } };
  if (typeof body.text !== "string" || body.text === "") return { status: 200, body: { ok: false, error: "no_text" } };
  const seq = ctx.nextId();
  const ts = `${Math.floor(Date.now() / 1000)}.${String(seq % 1_000_000).padStart(6, "0")}`;
  const botId = ctx.options.botId ?? "B0STUBBOT";
  const appId = ctx.options.appId ?? "A0STUBAPP";
  const threadTs = typeof body.thread_ts === "string" ? body.thread_ts : undefined;
  ctx.created.push({ id: ts, target: `${body.channel} ${threadTs ?? ts}`, text: body.text, permalink: `https://${team.toLowerCase()}.slack.com/archives/${body.channel}/p${ts.replace(".", "")}` });
  return {
    status: 200,
    body: {
      ok: true,
      channel: body.channel,
      ts,
      message: {
        type: "message",
        subtype: "bot_message",
        text: body.text,
        user: "U0STUBBOT",
        bot_id: botId,
        app_id: appId,
        ts,
        ...(threadTs ? { thread_ts: threadTs, parent_user_id: "U0HUMAN" } : {}),
        team,
        bot_profile: { id: botId, app_id: appId, name: "switchyard", team_id: team, deleted: false },
      },
    },
  };
}

function cairn(ctx: StubContext, method: string, url: URL, raw: string): Answer {
  const match = /^\/v1\/artifacts\/([^/]+)\/comments$/.exec(url.pathname);
  if (method !== "POST" || !match) return { status: 404, body: { error: "not_found" } };
  const body = parseJson(raw);
  if (typeof body?.body !== "string" || body.body === "") return { status: 400, body: { error: "body is required" } };
  const artifact = decodeURIComponent(match[1]!);
  const id = `cmt_${ctx.nextId()}`;
  const link = `${ctx.origin}/artifacts/${artifact}#comment-${id}`;
  ctx.created.push({ id, target: artifact, text: body.body, permalink: link });
  return { status: 201, body: { id, artifact_id: artifact, body: body.body, url: link, created_at: new Date().toISOString() } };
}

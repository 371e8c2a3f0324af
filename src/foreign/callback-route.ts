/**
 * The A2A push-notification callback, as a plain Node handler the gateway mounts:
 * `POST /api/v1/a2a/callback/{bridgeId}?t=TOKEN`.
 *
 * In order, before anything changes:
 * 1. the bridge id names the bridge and therefore the tenant (never the token or the body);
 * 2. the URL token must verify for that bridge and tenant (HMAC with the tenant's link key, constant time, expiry,
 *    key not retired) AND the notification token (`X-A2A-Notification-Token`, or `Authorization: Bearer`) must match
 *    the bridge's stored hash (constant time) — an unknown bridge or either check failing → 401;
 * 3. the tenant's token bucket (`callbackRatePerSec`) → 429;
 * 4. the body: over `callbackMaxBytes` → 413; not a v1.0 StreamResponse or v0.3 task event → 400 with the reason;
 *    its task id must be the bridge's foreign task (400 otherwise; while the send has not answered yet, the first
 *    push records it).
 * Then resume.ts applies it (batched with concurrent pushes, callback-intake.ts): non-terminal states update the
 * bridge, a terminal one resolves it and queues the RESULT that resumes the step exactly once through the
 * coordinator; `resumed` in the answer means that RESULT is committed (the outbox guarantees its delivery).
 * Duplicates and late pushes answer 200 and change nothing (A2A senders do not retry, so we never ask them to).
 *
 * `handleA2ACallback` answers false, touching nothing, for any other path.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { DependencyHealth } from "../process/dependency-health.js";
import { isSwitchyardError, ErrorCode } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { parsePushNotification } from "./a2a/push-body.js";
import type { CallbackIntake } from "./callback-intake.js";
import { CallbackTokenError, checkCallbackToken, notificationTokenMatches, parseCallbackToken } from "./callback-token.js";
import { TokenBuckets } from "./rate-limit.js";
import { CALLBACK_PATH_PREFIX } from "./sender.js";
import { CallbackTrace } from "../telemetry/foreign-spans.js";
import { tracingOn } from "../telemetry/tracing.js";

export interface A2ACallbackDeps {
  /** Bridge lookups and observations, group-committed across concurrent pushes; one per process. */
  intake: CallbackIntake;
  /** Largest body accepted (bytes). */
  maxBodyBytes: number;
  /** Per-tenant limiter; build one with `new TokenBuckets({ ratePerSec })` and keep it for the process. */
  limiter: TokenBuckets;
  logger?: Logger;
  clock?: () => number;
  /** Postgres/Redis outages are recorded here (logged once) and answered 503 instead of logged per push. */
  health?: DependencyHealth;
}

const PATH_RE = /^\/api\/v1\/a2a\/callback\/([^/]+)$/;

export async function handleA2ACallback(req: IncomingMessage, res: ServerResponse, deps: A2ACallbackDeps): Promise<boolean> {
  const url = new URL(req.url ?? "/", "http://localhost");
  if (!url.pathname.startsWith(CALLBACK_PATH_PREFIX)) return false;
  const match = PATH_RE.exec(url.pathname);
  if (!match) return false;
  if (!tracingOn()) return handleCallback(req, res, deps, url, match[1]!, undefined);
  const traced = new CallbackTrace();
  try {
    return await handleCallback(req, res, deps, url, match[1]!, traced);
  } finally {
    traced.end(res);
  }
}

/** `traced`: the callback's span (tracing on), started once the push is verified. */
async function handleCallback(req: IncomingMessage, res: ServerResponse, deps: A2ACallbackDeps, url: URL, segment: string, traced: CallbackTrace | undefined): Promise<boolean> {
  const logger = deps.logger ?? silentLogger;
  try {
    if (req.method !== "POST") return answer(res, undefined, 405, "use POST", { allow: "POST" });
    const bridgeId = decodePathSegment(segment);
    if (bridgeId === undefined) return answer(res, req, 401, "unknown callback");
    let target;
    try {
      const token = parseCallbackToken(url.searchParams.get("t"));
      target = await deps.intake.find(bridgeId);
      if (!target) return answer(res, req, 401, "unknown callback");
      // Every token of a bridge is signed with the key it was opened under; a token naming another kid is not one.
      const key = target.key?.kid === token.claims.kid ? target.key : undefined;
      checkCallbackToken(token, { id: target.bridge.id, orgId: target.bridge.orgId }, key, (deps.clock ?? Date.now)());
    } catch (error) {
      if (!(error instanceof CallbackTokenError)) throw error;
      logger.warn({ bridgeId, orgId: target?.bridge.orgId, refusal: error.refusal }, "A2A callback refused: URL token");
      return answer(res, req, 401, error.message);
    }
    const bridge = target.bridge;
    if (!notificationTokenMatches(presentedToken(req), bridge.notificationTokenHash)) {
      logger.warn({ bridgeId: bridge.id, orgId: bridge.orgId }, "A2A callback refused: notification token");
      return answer(res, req, 401, "the notification token does not match");
    }
    traced?.verified(bridge);
    if (!deps.limiter.take(bridge.orgId)) return answer(res, req, 429, "too many callbacks for this tenant; slow down", { "retry-after": "1" });

    const body = await readCapped(req, deps.maxBodyBytes);
    if (body === undefined) return answer(res, undefined, 413, `push notification body exceeds ${deps.maxBodyBytes} bytes`, { connection: "close" });
    let parsed;
    try {
      parsed = parsePushNotification(req.headers["content-type"], body, { maxBytes: deps.maxBodyBytes });
    } catch (error) {
      if (!isSwitchyardError(error)) throw error;
      const status = error.code === ErrorCode.PayloadTooLarge ? 413 : 400;
      return answer(res, undefined, status, `${String(error.details.reason ?? error.code)}: ${error.message}`);
    }
    if (bridge.foreignTaskId !== null && parsed.foreignTaskId !== bridge.foreignTaskId) {
      return answer(res, undefined, 400, "TASK_MISMATCH: the push is for another task than this callback's");
    }
    let outcome;
    try {
      const observation = {
        foreignTaskId: parsed.foreignTaskId,
        ...(parsed.state !== undefined ? { state: parsed.state } : {}),
        artifacts: parsed.artifacts,
        complete: parsed.complete,
        ...(parsed.message !== undefined ? { message: parsed.message } : {}),
        ...(parsed.statusAnswer ? { statusAnswer: parsed.statusAnswer } : {}),
        ...(parsed.usage ? { usage: parsed.usage } : {}),
      };
      outcome = await (traced ? traced.run(() => deps.intake.apply(target, observation)) : deps.intake.apply(target, observation));
      traced?.resumed(outcome);
    } catch (error) {
      // Another bridge of the tenant already owns that foreign task id: the body lies about its task.
      if ((error as { code?: string }).code === "23505") return answer(res, undefined, 400, "TASK_MISMATCH: the task belongs to another callback");
      throw error;
    }
    if (outcome === "mismatch") return answer(res, undefined, 400, "TASK_MISMATCH: the push is for another task than this callback's");
    const text = outcome === "ignored" ? "already resolved; nothing changed" : outcome === "unchanged" ? "unchanged; nothing new in this push" : outcome;
    return answer(res, undefined, 200, text);
  } catch (error) {
    // In an outage the push is lost to us (senders do not retry); the reconciliation sweep polls the task instead.
    if (deps.health?.absorb(error)) {
      if (!res.headersSent) reply(res, 503, "the notification could not be recorded now; try again shortly");
      return true;
    }
    logger.error({ err: error }, "A2A callback failed");
    if (!res.headersSent) reply(res, 500, "the notification could not be recorded");
    return true;
  }
}

/** A percent-decoded path segment, or undefined when its escapes are malformed (`%zz`). */
function decodePathSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function presentedToken(req: IncomingMessage): string | undefined {
  const header = req.headers["x-a2a-notification-token"];
  if (typeof header === "string" && header !== "") return header;
  const auth = req.headers.authorization;
  if (typeof auth === "string" && /^bearer\s+/i.test(auth)) return auth.replace(/^bearer\s+/i, "").trim();
  return undefined;
}

/** The body, or undefined when it exceeds `limit` (the rest is drained, not buffered). */
function readCapped(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on("end", () => resolve(size > limit ? undefined : Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** Answers and reports the request handled; `unread`, a refused request, has its body drained unread. */
function answer(res: ServerResponse, unread: IncomingMessage | undefined, status: number, text: string, headers: Record<string, string> = {}): true {
  reply(res, status, text, headers);
  unread?.resume();
  return true;
}

function reply(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(status < 300 ? { ok: true, outcome: text } : { error: text });
  res.writeHead(status, { ...headers, "cache-control": "no-store", "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) });
  res.end(body);
}


/**
 * `POST /api/v1/ingest/{endpointId}`: a provider's webhook delivery, as a plain Node handler the gateway mounts.
 *
 * In order, before anything is stored:
 * 1. the URL token names the endpoint, and therefore the tenant and the workflow; unknown or disabled → 404 (the
 *    same answer for both, so a disabled URL reveals nothing);
 * 2. the body is read up to `maxBodyBytes` (a larger Content-Length is refused unread, a longer stream is drained
 *    unbuffered) → 413;
 * 3. the signature is verified per source (src/ingest/verify/) → 401, counted; `generic` is not verified;
 * 4. Slack `url_verification` is answered with its challenge (only after verification).
 * Then: a delivery that carries nothing to do (GitHub `ping`) or is our own reply coming back (echo.ts) is
 * recorded and starts nothing (200 with its cause); any other starts ONE task of the endpoint's workflow for the
 * endpoint's tenant, idempotent on the provider's delivery id (202 `{taskId}`; a redelivery 200
 * `{taskId, duplicate: true}`), with the reply address parsed from the verified body (never for generic) and the
 * delivery row written in the task's transaction.
 *
 * GitHub and Gitea sign the body but not the delivery id, so for them the BODY is the identity: a body recorded for
 * the endpoint within 24 h is a duplicate whatever id it arrives under (answered with the first delivery's task or
 * cause, nothing stored), and the task's idempotency key is the body's sha256 — two copies of one body racing
 * (in one starter batch or on two gateways) meet on the tasks' unique key and start one task.
 * Slack's legacy verification `token` (top level of its bodies) is removed from the task input: workers never see it.
 *
 * Nothing here logs a body, a header value or a secret.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCode, isSwitchyardError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import { sha256Hex } from "../coordinator/envelopes.js";
import { depthBeyond, MAX_JSON_DEPTH } from "../json-depth.js";
import type { Pool } from "../store/db.js";
import { deliveryFacts } from "./delivery-facts.js";
import { recordDelivery, type DeliveryCause } from "./delivery-store.js";
import { echoProbe, type EchoChecker } from "./echo.js";
import type { EndpointCache, ResolvedEndpoint } from "./endpoint-cache.js";
import { deriveReplyAddress } from "./reply-address-parsers.js";
import type { SeenBodies } from "./seen-bodies.js";
import type { DeliveryStore } from "../store/ingest/delivery-store.js";
import type { TaskStarter } from "./task-starter.js";
import { verifyDelivery } from "./verify/index.js";

export const INGEST_PATH_PREFIX = "/api/v1/ingest/";
const PATH_RE = /^\/api\/v1\/ingest\/([^/]+)$/;
const MAX_BODY_DEPTH = MAX_JSON_DEPTH - 1;
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function decodeStrictUtf8(raw: Buffer): string | undefined {
  try {
    return STRICT_UTF8.decode(raw);
  } catch {
    return undefined;
  }
}

export interface IngestRouteDeps {
  /** Reads and writes delivery rows; the owner's pool (the route runs before a tenant is known). */
  db: Pool;
  /** The ingest deliveries port (runtime.stores.ingestDeliveries). */
  deliveries: DeliveryStore;
  /**
   * Starts tasks: the gateway passes `createBatchedTaskStarter(tasks)` over its tenant-scoped TaskService, so the
   * task's transaction runs under RLS and a burst of one tenant's deliveries shares one commit.
   */
  tasks: TaskStarter;
  endpoints: EndpointCache;
  /** Our own replies coming back (src/ingest/echo.ts), checked in batches. */
  echoes: EchoChecker;
  /** GitHub / Gitea bodies delivered before (src/ingest/seen-bodies.ts), checked in batches. */
  seenBodies: SeenBodies;
  /** Largest body accepted (config.origin.ingestMaxBodyBytes). */
  maxBodyBytes: number;
  metrics?: Pick<Metrics, "ingestDeliveries">;
  logger?: Logger;
  clock?: () => number;
}

export function createIngestRoute(deps: IngestRouteDeps): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  return (req, res) => handleIngest(req, res, deps);
}

export async function handleIngest(req: IncomingMessage, res: ServerResponse, deps: IngestRouteDeps): Promise<boolean> {
  const path = (req.url ?? "/").split("?")[0]!;
  if (!path.startsWith(INGEST_PATH_PREFIX)) return false;
  const match = PATH_RE.exec(path);
  if (!match) return false;
  const logger = deps.logger ?? silentLogger;
  const count = (source: string, outcome: string) => deps.metrics?.ingestDeliveries.inc({ source, outcome });
  if (req.method !== "POST") return answer(res, req, 405, { error: "use POST" }, { allow: "POST" });

  const endpoint = await deps.endpoints.get(decodeSegment(match[1]!));
  if (!endpoint || !endpoint.enabled) {
    count("unknown", "unknown_endpoint");
    return answer(res, req, 404, { error: "no such ingest endpoint" });
  }
  const { source } = endpoint;
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > deps.maxBodyBytes) {
    count(source, "too_large");
    return answer(res, req, 413, { error: `the body exceeds ${deps.maxBodyBytes} bytes` }, { connection: "close" });
  }
  const raw = await readCapped(req, deps.maxBodyBytes);
  if (raw === undefined) {
    count(source, "too_large");
    return answer(res, undefined, 413, { error: `the body exceeds ${deps.maxBodyBytes} bytes` }, { connection: "close" });
  }

  const nowMs = (deps.clock ?? Date.now)();
  if (source !== "generic") {
    if (endpoint.unverifiable) {
      count(source, "unverifiable");
      logger.error({ endpointId: endpoint.id, orgId: endpoint.orgId, source }, "ingest delivery refused: the endpoint's secret cannot be opened");
      return answer(res, undefined, 503, { error: "this endpoint cannot verify deliveries now (its secret cannot be opened); the operator was told" });
    }
    const verdict = await verifyDelivery(source, { headers: req.headers, body: raw, nowMs }, deps.endpoints.secretsOf(endpoint));
    if (!verdict.ok) {
      count(source, verdict.outcome);
      logger.warn({ endpointId: endpoint.id, orgId: endpoint.orgId, source, refusal: verdict.outcome, reason: verdict.reason }, "ingest delivery refused: verification failed");
      return answer(res, undefined, 401, { error: verdict.reason });
    }
  }

  // Strict UTF-8 for every source: a lenient decode maps each invalid byte to U+FFFD, so distinct bodies (distinct
  // replay identities) would become one task input, and the task would not hold what was sent.
  const text = decodeStrictUtf8(raw);
  if (text === undefined) {
    count(source, "malformed");
    return answer(res, undefined, 400, { error: "the body is not valid UTF-8" });
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    // A generic sender may post anything; a verified provider always posts JSON.
    if (source !== "generic") {
      count(source, "malformed");
      return answer(res, undefined, 400, { error: "the body is not JSON" });
    }
    body = text;
  }
  // The task input holds the body one level down ({ source, event, delivery, body }), within MAX_JSON_DEPTH.
  if (depthBeyond(body, MAX_BODY_DEPTH) !== 0) {
    count(source, "malformed");
    return answer(res, undefined, 400, { error: `the body nests deeper than ${MAX_BODY_DEPTH} levels` });
  }
  const facts = deliveryFacts(source, req, body);
  if ("malformed" in facts) {
    count(source, "malformed");
    return answer(res, undefined, 400, { error: facts.malformed });
  }
  if (facts.challenge !== undefined) {
    count(source, "url_verification");
    return answer(res, undefined, 200, { challenge: facts.challenge });
  }
  // Deliveries without a provider id (generic without a header) are recorded under a local one: never deduplicated.
  const deliveryId = facts.deliveryId ?? `local:${randomUUID()}`;
  const log = { endpointId: endpoint.id, orgId: endpoint.orgId, source, event: facts.event, deliveryId };
  const bodySha256 = sha256Hex(raw);
  const byBody = source === "github" || source === "gitea";

  // The replay check and the echo check are independent reads: asked together, they cost one round trip of latency.
  const probe = facts.ignore === undefined ? echoProbe(source, facts.event, body) : undefined;
  const [seen, echo] = await Promise.all([
    byBody ? deps.seenBodies.find(endpoint.id, bodySha256) : undefined,
    probe ? deps.echoes.isSelfReply(endpoint.orgId, probe) : false,
  ]);
  if (seen) {
    count(source, "duplicate");
    logger.debug({ ...log, cause: seen.cause, taskId: seen.taskId }, "ingest delivery is a body seen before; nothing stored");
    return answer(res, undefined, 200, seen.cause === "task_started" && seen.taskId ? { taskId: seen.taskId, duplicate: true } : { cause: seen.cause, ...(seen.taskId ? { taskId: seen.taskId } : {}), duplicate: true });
  }

  const notStarted = async (cause: Exclude<DeliveryCause, "task_started">) => {
    const recorded = await recordDelivery(deps.deliveries, deps.db, { endpointId: endpoint.id, deliveryId, orgId: endpoint.orgId, event: facts.event, cause, taskId: null, bodySha256 }, { byBody });
    count(source, recorded.duplicate ? "duplicate" : cause);
    logger.debug({ ...log, cause: recorded.cause, duplicate: recorded.duplicate }, "ingest delivery recorded; no task started");
    return answer(res, undefined, 200, {
      cause: recorded.cause,
      ...(recorded.taskId ? { taskId: recorded.taskId } : {}),
      ...(recorded.duplicate ? { duplicate: true } : {}),
    });
  };
  if (facts.ignore !== undefined) return notStarted("ignored");
  if (echo) return notStarted("self_reply");

  return startTask(res, deps, endpoint, { event: facts.event, providerDeliveryId: facts.deliveryId, deliveryId, body, bodySha256 }, count, logger, log);
}

async function startTask(
  res: ServerResponse,
  deps: IngestRouteDeps,
  endpoint: ResolvedEndpoint,
  delivery: { event: string; providerDeliveryId: string | undefined; deliveryId: string; body: unknown; bodySha256: string },
  count: (source: string, outcome: string) => void,
  logger: Logger,
  log: Record<string, unknown>,
): Promise<true> {
  const { source } = endpoint;
  // Only a verified body chooses a place to answer: generic never gets an address, whatever it carries.
  const replyTo = source === "generic" ? null : deriveReplyAddress(source, delivery.event, delivery.body);
  let started;
  try {
    started = await deps.tasks.start({
      request: {
        orgId: endpoint.orgId,
        workflow: endpoint.workflow,
        input: { source, event: delivery.event, delivery: delivery.providerDeliveryId ?? null, body: source === "slack" ? withoutSlackToken(delivery.body) : delivery.body },
        ...idempotencyKeyOf(endpoint, delivery),
        replyTo,
      },
      // Written in the task's transaction: a delivery is never recorded without its task, nor the reverse.
      delivery: { endpointId: endpoint.id, deliveryId: delivery.deliveryId, orgId: endpoint.orgId, event: delivery.event, bodySha256: delivery.bodySha256 },
    });
  } catch (error) {
    if (isSwitchyardError(error, ErrorCode.NotFound)) {
      count(source, "no_workflow");
      logger.error({ ...log, err: error }, "ingest delivery refused: the endpoint's workflow no longer exists");
      return answer(res, undefined, 422, { error: `the endpoint's workflow ${endpoint.workflow} does not exist` });
    }
    if (isSwitchyardError(error, ErrorCode.PayloadTooLarge)) {
      count(source, "too_large");
      return answer(res, undefined, 413, { error: error.message });
    }
    throw error;
  }
  count(source, !started.created ? "duplicate" : source === "generic" ? "unverified_generic" : "verified");
  logger.debug({ ...log, taskId: started.taskId, created: started.created, replyTo: replyTo?.kind ?? null }, "ingest delivery started a task");
  return started.created ? answer(res, undefined, 202, { taskId: started.taskId }) : answer(res, undefined, 200, { taskId: started.taskId, duplicate: true });
}

/**
 * The task's idempotency key: the body's hash for GitHub and Gitea (their delivery id is unsigned, and a redelivery
 * carries the same body anyway), the provider's delivery id for the others (Slack's `event_id` and Cairn's
 * `webhook-id` are signed), none for a generic delivery without an id.
 */
function idempotencyKeyOf(endpoint: ResolvedEndpoint, delivery: { providerDeliveryId: string | undefined; bodySha256: string }): { idempotencyKey?: string } {
  if (endpoint.source === "github" || endpoint.source === "gitea") return { idempotencyKey: `ingest:${endpoint.id}:body:${delivery.bodySha256}` };
  return delivery.providerDeliveryId !== undefined ? { idempotencyKey: `ingest:${endpoint.id}:${delivery.providerDeliveryId}` } : {};
}

/** A Slack body without its top-level legacy verification `token`: a shared secret a worker has no use for. */
function withoutSlackToken(body: unknown): unknown {
  if (typeof body !== "object" || body === null || Array.isArray(body) || !("token" in body)) return body;
  const { token: _token, ...rest } = body as Record<string, unknown>;
  return rest;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return "";
  }
}

/** The body, or undefined once it exceeds `limit`: from then on the rest is drained, never buffered. */
function readCapped(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      // Answer 413 at once (the caller closes the connection); what still arrives is read and dropped.
      chunks.length = 0;
      resolve(undefined);
    });
    req.on("end", () => resolve(size > limit ? undefined : Buffer.concat(chunks, size)));
    req.on("error", reject);
  });
}

/** Answers JSON and reports the request handled; `unread`, a request refused before its body, is drained. */
function answer(res: ServerResponse, unread: IncomingMessage | undefined, status: number, body: Record<string, unknown>, headers: Record<string, string> = {}): true {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, "cache-control": "no-store", "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
  unread?.resume();
  return true;
}

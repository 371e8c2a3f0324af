/**
 * `ingest_per_s`: verified GitHub deliveries per second through `POST /api/v1/ingest/{id}` to task started.
 *
 * Set-up (untimed): a tenant, a one-step workflow, a `github` ingest endpoint (its secret sealed with a bench key),
 * and N `issue_comment` deliveries (a real @octokit/webhooks-examples payload), each with its own
 * `X-GitHub-Delivery` and signed beforehand, as GitHub sends them.
 *
 * Timed: every delivery is POSTed to the real ingest route on a local HTTP server from `CONCURRENCY` keep-alive
 * connections; each answer (202) comes after the task's transaction committed (task row with its reply address,
 * steps, delivery row, the engine's start: governed hop, audit row, outbox) and its WORK was published. The route
 * uses a tenant-scoped TaskService, as the gateway does.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { randomBytes, randomUUID } from "node:crypto";
import { sign } from "@octokit/webhooks-methods";
import { defaultConfig, type Config } from "../../src/config/index.js";
import { TaskService } from "../../src/tasks/tasks.js";
import { EchoChecker } from "../../src/ingest/echo.js";
import { SeenBodies } from "../../src/ingest/seen-bodies.js";
import { EndpointCache } from "../../src/ingest/endpoint-cache.js";
import { createIngestEndpoint } from "../../src/ingest/endpoint-store.js";
import { createIngestRoute } from "../../src/ingest/ingest-route.js";
import { createBatchedTaskStarter } from "../../src/ingest/task-starter.js";
import { createRuntime } from "../../src/runtime.js";
import { tenantScoped } from "../../src/store/tenant-scope.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { createTenant } from "../../src/tenancy/tenants.js";
import { createSecretCipher, parseEncryptionKeys } from "../../src/vault/secret-cipher.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { BENCH_BUS_SECRETS, perSecond, type Scenario } from "../support.js";
import { sendAll } from "./push-client.js";

const SIZES = { full: { warmup: 500, deliveries: 6_000 }, quick: { warmup: 200, deliveries: 1_500 } };
/** Keep-alive connections posting at once: a forge's webhook senders. */
const CONCURRENCY = 64;
const ORG = "bench-ingest";

function serialise(path: string, headers: Record<string, string>, body: string, host: string): Buffer {
  const bytes = Buffer.from(body);
  const lines = Object.entries({ host, "content-type": "application/json", ...headers, "content-length": String(bytes.length) }).map(([k, v]) => `${k}: ${v}`);
  return Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\n${lines.join("\r\n")}\r\n\r\n`, "latin1"), bytes]);
}

export const ingestScenario: Scenario = {
  name: "ingest",
  description: "verified GitHub deliveries/s: verify signature → parse reply address → one task started (committed, WORK published)",
  budgetMs: { full: 60_000, quick: 30_000 },
  async run(ctx) {
    const sizes = SIZES[ctx.quick ? "quick" : "full"];
    const db = await ctx.createScratchDatabase();
    const encryptionKeys = parseEncryptionKeys(randomBytes(32).toString("base64"));
    const config: Config = {
      ...defaultConfig,
      redisUrl: ctx.redisUrl,
      databaseUrl: db.url,
      logLevel: "silent",
      bus: { ...defaultConfig.bus, keyPrefix: ctx.keyPrefix },
      flags: { ...defaultConfig.flags, busEnabled: true },
      busAuth: { secrets: BENCH_BUS_SECRETS, publisherKeys: [] },
      origin: { ...defaultConfig.origin, encryptionKeys },
    };
    const runtime = await createRuntime(config, { poolSize: 20 });
    ctx.defer(() => runtime.close());
    const cipher = createSecretCipher(encryptionKeys);
    await createTenant(runtime.stores.tenants, runtime.pool, { orgId: ORG, name: ORG });
    await submitWorkflow(runtime.pool, ORG, parseWorkflowDefinition(`name: triage\nsteps:\n  - { id: look, to: "role:triage" }\n`));
    const { endpoint, secret } = await createIngestEndpoint(runtime.stores.ingestEndpoints, runtime.pool, cipher, ORG, { source: "github", workflow: "triage" });
    const tasks = new TaskService({ pool: runtime.pool, engine: runtime.engine, approvals: runtime.stores.approvals, tasks: runtime.stores.tasks, replies: runtime.stores.replies, publisher: runtime.publisher, maxPayloadBytes: config.bus.maxPayloadBytes, transact: tenantScoped(runtime.pool) });
    const route = createIngestRoute({ db: runtime.pool, deliveries: runtime.stores.ingestDeliveries, tasks: createBatchedTaskStarter(tasks, { deliveries: runtime.stores.ingestDeliveries }), echoes: new EchoChecker(runtime.pool, { store: runtime.stores.echoes }), seenBodies: new SeenBodies(runtime.stores.ingestDeliveries, runtime.pool), endpoints: new EndpointCache({ db: runtime.pool, store: runtime.stores.ingestEndpoints, cipher }), maxBodyBytes: config.origin.ingestMaxBodyBytes, metrics: runtime.metrics });
    const server: Server = createServer((req, res) => {
      route(req, res).catch((error: unknown) => {
        ctx.log(`ingest route failed: ${(error as Error).message}`);
        res.writeHead(500).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    ctx.defer(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as AddressInfo).port;

    const examples = createRequire(import.meta.url)("@octokit/webhooks-examples") as Array<{ name: string; examples: any[] }>;
    const example = examples.find((e) => e.name === "issue_comment")!.examples[0];
    const body = JSON.stringify(example);
    // Each delivery is a comment of its own: a GitHub body seen before is a duplicate whatever its delivery id.
    let commentId = 1;
    const requests = (n: number) =>
      Promise.all(
        Array.from({ length: n }, async () => {
          const unique = JSON.stringify({ ...example, comment: { ...example.comment, id: commentId++ } });
          const headers = { "x-github-event": "issue_comment", "x-github-delivery": randomUUID(), "x-hub-signature-256": await sign(secret!, unique) };
          return serialise(`/api/v1/ingest/${endpoint.id}`, headers, unique, `127.0.0.1:${port}`);
        }),
      );
    const warmup = await requests(sizes.warmup);
    const timed = await requests(sizes.deliveries);

    await ctx.phase("warm-up", () => sendAll(port, warmup, CONCURRENCY, ctx.signal));
    const started = performance.now();
    const result = await ctx.phase("deliveries", () => sendAll(port, timed, CONCURRENCY, ctx.signal));
    const ms = performance.now() - started;
    const ok = result.outcomes.get("http_202") ?? 0;
    ctx.log(`outcomes: ${JSON.stringify(Object.fromEntries(result.outcomes))}`);
    return [
      {
        name: "ingest_per_s",
        value: perSecond(ok, ms),
        unit: "deliveries/s",
        extra: { deliveries: result.sent, started: ok, concurrency: CONCURRENCY, bodyBytes: Buffer.byteLength(body), partial: result.sent < timed.length },
      },
    ];
  },
};

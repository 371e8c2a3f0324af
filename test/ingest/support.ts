/**
 * An ingest test bed: a runtime with an encryption key, a gateway serving the ingest route, a tenant with a
 * workflow, its logs captured, and signers speaking each provider's real scheme.
 */
import { createHmac, randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { sign as signGithub } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import { createClient } from "@connectrpc/connect";
import { createApiTransport } from "../../src/cli/remote/transport.js";
import { startGateway, type Gateway } from "../../src/gateway/server.js";
import { IngestService, IngestSource } from "../../src/gen/switchyard/api/v1/ingest_pb.js";
import { createLogger } from "../../src/logger.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { createTenantWithKey } from "../../src/tenancy/bootstrap.js";
import { parseEncryptionKeys } from "../../src/vault/secret-cipher.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";

export const TEST_ENCRYPTION_KEY = `k1:${randomBytes(32).toString("base64")}`;

export interface IngestBed {
  rt: TestRuntime;
  gateway: Gateway;
  /** Every log line the runtime and gateway wrote. */
  logs: string[];
  key: string;
  ingest: ReturnType<typeof createClient<typeof IngestService>>;
  post(endpointId: string, body: string | Buffer, headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  count(sql: string, params?: unknown[]): Promise<number>;
  cleanup(): Promise<void>;
}

export const WORKFLOW = `
name: triage
steps:
  - { id: look, to: "role:triage" }
`;

export async function createIngestBed(options: { maxBodyBytes?: number; encryption?: boolean; orgId?: string } = {}): Promise<IngestBed> {
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const rt = await createTestRuntime({ logger: createLogger({ level: "debug", destination }) });
  const config = {
    ...rt.config,
    origin: {
      ...rt.config.origin,
      encryptionKeys: options.encryption === false ? [] : parseEncryptionKeys(TEST_ENCRYPTION_KEY),
      ingestMaxBodyBytes: options.maxBodyBytes ?? rt.config.origin.ingestMaxBodyBytes,
    },
  };
  const gateway = await startGateway({ ...rt, config }, { port: 0, host: "127.0.0.1", ingestCacheTtlMs: 0, collectMetrics: false, shutdownGraceMs: 1000 });
  const orgId = options.orgId ?? "acme";
  const key = (await createTenantWithKey(rt.stores, rt.pool, { orgId, name: orgId })).apiKey.secret;
  await submitWorkflow(rt.pool, orgId, parseWorkflowDefinition(WORKFLOW));
  const ingest = createClient(IngestService, createApiTransport({ url: gateway.url, token: key, useBinaryFormat: false }));
  return {
    rt,
    gateway,
    logs,
    key,
    ingest,
    async post(endpointId, body, headers = {}) {
      const res = await fetch(`${gateway.url}/api/v1/ingest/${endpointId}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // keep the text
      }
      return { status: res.status, body: parsed };
    },
    async count(sql, params = []) {
      const { rows } = await rt.pool.query<{ n: string }>(sql, params);
      return Number(rows[0]!.n);
    },
    async cleanup() {
      await gateway.close();
      await rt.cleanup();
    },
  };
}

export async function githubHeaders(secret: string, body: string, event: string, delivery: string): Promise<Record<string, string>> {
  return { "x-github-event": event, "x-github-delivery": delivery, "x-hub-signature-256": await signGithub(secret, body) };
}

export function giteaHeaders(secret: string, body: string, event: string, delivery: string): Record<string, string> {
  return { "x-gitea-event": event, "x-gitea-delivery": delivery, "x-gitea-signature": createHmac("sha256", secret).update(body).digest("hex") };
}

export function slackHeaders(secret: string, body: string, timestampSec = Math.floor(Date.now() / 1000)): Record<string, string> {
  const signature = `v0=${createHmac("sha256", secret).update(`v0:${timestampSec}:${body}`).digest("hex")}`;
  return { "x-slack-request-timestamp": String(timestampSec), "x-slack-signature": signature };
}

export function cairnHeaders(secret: string, body: string, id: string, at = new Date()): Record<string, string> {
  return { "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(secret).sign(id, at, body) };
}

const SOURCES = { github: IngestSource.GITHUB, gitea: IngestSource.GITEA, slack: IngestSource.SLACK, cairn: IngestSource.CAIRN, generic: IngestSource.GENERIC } as const;

/** One endpoint of the `triage` workflow per source named, with its URL id and signing secret. */
export async function createEndpoints<N extends keyof typeof SOURCES>(bed: IngestBed, names: readonly N[]): Promise<Record<N, { id: string; secret: string }>> {
  const out = {} as Record<N, { id: string; secret: string }>;
  for (const name of names) {
    const created = await bed.ingest.create({ source: SOURCES[name], workflow: "triage" });
    out[name] = { id: created.endpoint!.id, secret: created.secret };
  }
  return out;
}

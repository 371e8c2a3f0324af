/**
 * A test runtime with a gateway on 127.0.0.1:0, and helpers to make tenants, keys and authenticated clients.
 */
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { startGateway, type Gateway } from "../../src/gateway/server.js";
import type { GatewayOptions } from "../../src/gateway/options.js";
import { createApiTransport } from "../../src/cli/remote/transport.js";
import { createApiKey } from "../../src/tenancy/api-keys.js";
import { createTenantWithKey } from "../../src/tenancy/bootstrap.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";

export interface GatewayFixture {
  rt: TestRuntime;
  gateway: Gateway;
  url: string;
  /** Creates a tenant and returns its first API key. */
  tenant(orgId: string): Promise<string>;
  adminKey(): Promise<string>;
  client<S extends DescService>(service: S, token: string, options?: { tenant?: string; json?: boolean }): Client<S>;
  /** Stores a workflow directly (operator path). */
  submit(orgId: string, yaml: string): Promise<void>;
  cleanup(): Promise<void>;
}

export async function createGatewayFixture(options: GatewayOptions = {}, runtimeOptions: Parameters<typeof createTestRuntime>[0] = {}): Promise<GatewayFixture> {
  const rt = await createTestRuntime(runtimeOptions);
  let gateway: Gateway;
  try {
    gateway = await startGateway(rt, { port: 0, host: "127.0.0.1", watchIntervalMs: 50, shutdownGraceMs: 2000, ...options });
  } catch (error) {
    await rt.cleanup();
    throw error;
  }
  return {
    rt,
    gateway,
    url: gateway.url,
    async tenant(orgId) {
      return (await createTenantWithKey(rt.stores, rt.pool, { orgId, name: `Tenant ${orgId}` })).apiKey.secret;
    },
    async adminKey() {
      return (await createApiKey(rt.stores.apiKeys, rt.pool, { kind: "admin", name: "sre" })).secret;
    },
    client(service, token, clientOptions = {}) {
      return createClient(service, createApiTransport({ url: gateway.url, token, ...(clientOptions.tenant ? { tenant: clientOptions.tenant } : {}), useBinaryFormat: !clientOptions.json }));
    },
    async submit(orgId, yaml) {
      await submitWorkflow(rt.pool, orgId, parseWorkflowDefinition(yaml));
    },
    async cleanup() {
      await gateway.close();
      await rt.cleanup();
    },
  };
}

/** A curl-equivalent call: POST JSON to `/<service>/<method>` with a bearer key. */
export async function postJson(url: string, path: string, body: unknown, token?: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(`${url}/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** The Connect code a call failed with; "ok" when it did not fail. */
export async function codeOf(promise: Promise<unknown>): Promise<Code | "ok"> {
  try {
    await promise;
  } catch (error) {
    return ConnectError.from(error).code;
  }
  return "ok";
}

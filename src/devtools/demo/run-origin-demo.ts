/**
 * `npm run demo -- origin`: an origin reply end to end, on loopback, narrated.
 *
 * A local stand-in for a GitHub forge (src/devtools/demo/provider-stubs.ts) → the tenant's connection to it (its token
 * sealed in the vault) and a GitHub ingest endpoint → a signed `issue_comment` delivery to the gateway → a task whose
 * reply address the verified body chose → the worker's `ctx.reply` (examples/handlers/responder.ts), governed as
 * `origin_reply` and audited → the forge receives the comment with the connection's token → the forge's webhook for
 * that comment comes back and is recognised as our own (`self_reply`): no task. Then the hops and the chain.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { sign } from "@octokit/webhooks-methods";
import type { Config } from "../../config/index.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { verifyChain } from "../../governance/audit-verify.js";
import { createIngestEndpoint, ingestUrl } from "../../ingest/endpoint-store.js";
import type { Logger } from "../../logger.js";
import { submitWorkflow } from "../../store/workflow-store.js";
import { createTenant, getTenant } from "../../tenancy/tenants.js";
import { addConnection } from "../../vault/connection-store.js";
import { createSecretCipher, type EncryptionKey } from "../../vault/secret-cipher.js";
import { parseWorkflowDefinition } from "../../workflow/definition.js";
import { describeVerification, formatTable } from "../../cli/output.js";
import { formatStepLine, watchTask } from "../../cli/task-watch.js";
import { switchOnDemoFlags } from "./demo-flags.js";
import { startDemoStack } from "./demo-stack.js";
import { formatHopsTable } from "./hops-table.js";
import { indent, prepareDemoDatabase } from "./narration.js";
import { startProviderStub, type ProviderStub } from "./provider-stubs.js";
import { assetPath } from "../../package-paths.js";

export const ORIGIN_WORKFLOW_PATH = assetPath("examples/workflows/issue-responder.yaml");
const ROLE = "responder";
const ACTOR = "demo";

export interface OriginDemoOptions {
  config: Config;
  print(line: string): void;
  logger: Logger;
  /** @defaultValue "demo" */
  tenant?: string;
  /** @defaultValue 60 000 */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export async function runOriginDemo(options: OriginDemoOptions): Promise<{ ok: boolean }> {
  const tenant = options.tenant ?? "demo";
  const say = (line = "") => options.print(line);
  say("Switchyard origin-reply demo: work that arrives from a conversation is answered in that conversation.");
  say("The delivery chooses the place, the tenant's connection the credential, the worker only the words.");
  say();
  await prepareDemoDatabase(options.config.databaseUrl, say);

  let keys: readonly EncryptionKey[] = options.config.origin.encryptionKeys;
  if (keys.length === 0) {
    keys = [{ id: "demo", key: randomBytes(32) }];
    say("   no SWITCHYARD_SECRET_ENCRYPTION_KEY set: a random key seals this run's secrets (a real deployment sets one)");
  }
  const config: Config = { ...options.config, origin: { ...options.config.origin, encryptionKeys: keys } };
  const cipher = createSecretCipher(keys)!;

  const token = `ghp_demo${randomBytes(16).toString("hex")}`;
  say("2. Starting a stand-in GitHub on 127.0.0.1 (it accepts only the connection's token, and records what it receives)");
  const forge = await startProviderStub("github", { token });
  try {
    const host = new URL(forge.origin).host;
    say(`   ${forge.origin} — the REST API a connection posts comments to`);
    say(`3. Starting a coordinator, a "${ROLE}" worker (examples/handlers/${ROLE}.ts) and the gateway`);
    const stack = await startDemoStack({ config, logger: options.logger, roles: [ROLE] });
    try {
      const { pool, flags, tasks, stores } = stack.runtime;
      say(`   gateway on ${stack.gateway.url}; the egress guard admits 127.0.0.0/8 for this run (SWITCHYARD_EGRESS_ALLOWED_NETWORKS)`);
      if (!(await getTenant(stores.tenants, pool, tenant))) await createTenant(stores.tenants, pool, { orgId: tenant, name: tenant });
      say(`   ${await switchOnDemoFlags({ pool, flags, tenant, roles: [ROLE], delegatingRoles: [], reply: true, actor: ACTOR })}`);
      const definition = parseWorkflowDefinition(await readFile(ORIGIN_WORKFLOW_PATH, "utf8"), { format: "yaml" });
      const submitted = await submitWorkflow(pool, tenant, definition);
      say(`   workflow ${submitted.ref} (examples/workflows/issue-responder.yaml)`);

      say(`4. Tenant "${tenant}" adds a connection: its token for ${host}, allowed to post to acme/* only`);
      const connection = await addConnection(stores, pool, cipher, tenant, { kind: "github", accountKey: host, apiBaseUrl: forge.apiBaseUrl, targets: ["acme/*"], secret: token }, { actor: ACTOR });
      say(`   connection ${connection.id}: secret stored sealed (AES-256-GCM), listed only as ${connection.fingerprint}`);
      say(`   (by hand: switchyard connection add --tenant ${tenant} --kind github --account ${host} --api-url ${forge.apiBaseUrl} --targets 'acme/*' --secret-stdin)`);
      const endpoint = await createIngestEndpoint(stack.runtime.stores.ingestEndpoints, pool, cipher, tenant, { source: "github", workflow: submitted.ref });
      const url = ingestUrl(stack.gateway.url, endpoint.endpoint.id);
      say(`   and a GitHub ingest endpoint: ${url.replace(endpoint.endpoint.id, `${endpoint.endpoint.id.slice(0, 6)}…`)} with its webhook secret (shown once)`);

      say("5. GitHub delivers a signed issue_comment webhook: ann asks on acme/app#7");
      const comment = issueComment(host, 101, "ann", "@switchyard can you triage this?");
      const delivered = await post(url, comment, endpoint.secret!, "issue_comment");
      if (delivered.status !== 202 || typeof delivered.body.taskId !== "string") {
        throw new SwitchyardError(ErrorCode.Internal, `the delivery was answered ${delivered.status} ${JSON.stringify(delivered.body)}`);
      }
      const taskId = delivered.body.taskId;
      const view = await tasks.get(tenant, taskId);
      say(`   202: task ${taskId}; reply address from the verified body: ${view.replyTo?.kind} ${view.replyTo?.display}`);

      say("6. Watching the task");
      const final = await watchTask({
        tasks,
        orgId: tenant,
        taskId,
        timeoutMs: options.timeoutMs ?? 60_000,
        intervalMs: 50,
        ...(options.signal ? { signal: options.signal } : {}),
        onStep: (step) => say(`   ${formatStepLine(step)}`),
      });
      const reply = final.replies?.[0];
      say(`7. The worker called ctx.reply(text): ${reply ? `${reply.state}${reply.permalink ? `, ${reply.permalink}` : ""}${reply.code ? ` (${reply.code})` : ""}` : "no reply recorded"}`);
      const posted = forge.requests.filter((r) => r.method === "POST");
      for (const request of posted) say(`   the forge received ${request.method} ${request.path} with Authorization: ${mask(String(request.headers.authorization ?? ""))}`);
      const created = forge.created.at(-1);
      if (created) say(`   comment ${created.id}: "${created.text}"`);

      say("8. The forge sends its webhook for that new comment back to the same endpoint");
      let echoOk = false;
      if (created) {
        const echo = issueComment(host, Number(created.id), "switchyard-bot", created.text);
        const back = await post(url, echo, endpoint.secret!, "issue_comment");
        echoOk = back.status === 200 && back.body.cause === "self_reply";
        say(`   ${back.status} ${JSON.stringify(back.body)}: ${echoOk ? "recognised as our own reply, no task started" : "NOT recognised as our own reply"}`);
      }

      say("9. The task's audit rows in seq order (the reply is the origin_reply hop):");
      const rows = await stack.runtime.stores.audit.list(pool, tenant, { taskId, limit: 1_000 });
      say(indent(formatHopsTable(rows)));
      const replies = final.replies ?? [];
      if (replies.length > 0) say(indent(formatTable(["reply", "state", "to", "actor"], replies.map((r) => [r.id.slice(0, 8), r.state, r.addressDisplay ?? "", r.actor]))));
      const verification = await verifyChain(stack.runtime.stores.audit, pool, tenant);
      say(`10. ${describeVerification(tenant, verification)}`);
      const ok = final.status === "completed" && reply?.state === "sent" && posted.length === 1 && echoOk && verification.ok;
      say();
      say(ok ? "Demo finished: the reply reached the issue with the tenant's token, its echo started nothing, and the chain verifies." : "Demo FAILED: see the steps above.");
      return { ok };
    } finally {
      await stack.stop();
    }
  } finally {
    await forge.close();
  }
}

function issueComment(host: string, commentId: number, login: string, text: string): Record<string, unknown> {
  return {
    action: "created",
    issue: { number: 7, title: "Build fails on main", html_url: `http://${host}/acme/app/issues/7` },
    comment: { id: commentId, body: text, user: { login }, html_url: `http://${host}/acme/app/issues/7#issuecomment-${commentId}` },
    repository: { full_name: "acme/app", html_url: `http://${host}/acme/app` },
    sender: { login },
  };
}

async function post(url: string, payload: unknown, secret: string, event: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = JSON.stringify(payload);
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": event, "x-github-delivery": randomUUID(), "x-hub-signature-256": await sign(secret, body) },
    body,
  });
  return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, unknown> };
}

/** `token ghp_demo…(40 chars)`: enough to see which credential went, never the credential. */
function mask(header: string): string {
  const [scheme, value = ""] = header.split(" ");
  return `${scheme} ${value.slice(0, 8)}…(${value.length} chars)`;
}

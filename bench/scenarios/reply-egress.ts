/**
 * `reply_added_ms`: what the reply sender adds to one origin reply over a raw `fetch` of the same post.
 *
 * A GitHub stand-in (src/devtools/demo/provider-stubs.ts) on 127.0.0.1 and a tenant connection to it (token sealed in the
 * vault). Untimed per call: a task row with a forge_comment address and a `pending` reply row, as the engine writes
 * them after the governed hop committed. Timed, sender path: `runOnce()` — claim the row (`dialing`), open the
 * connection's secret, check address against connection, the guarded fetch (DNS pinned, no redirects) through
 * `@octokit/core`, the outcome write (`sent`, provider id, permalink). Raw path: Node's `fetch` POSTing the same body
 * with the same token to the same URL. The two alternate call by call. `reply_added_ms` = p50(sender) − p50(raw).
 */
import { createPostgresStores } from "../../src/store/postgres-stores.js";
import { randomBytes, randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { defaultConfig } from "../../src/config/index.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { startProviderStub } from "../../src/devtools/demo/provider-stubs.js";
import { createReplySender } from "../../src/replies/reply-sender.js";
import { createPostgresReplyStore } from "../../src/store/replies/postgres-reply-store.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { createTenant } from "../../src/tenancy/tenants.js";
import { addConnection } from "../../src/vault/connection-store.js";
import { createSecretCipher } from "../../src/vault/secret-cipher.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { summarize, type Measurement, type Scenario } from "../support.js";

const stores = createPostgresStores();

const SIZES = { full: { warmup: 200, calls: 1_500 }, quick: { warmup: 50, calls: 300 } };
const ORG = "bench-reply";
const TEXT = "Triage done: the failing test is flaky on loaded runners; a fix is in review.";

export const replyEgressScenario: Scenario = {
  name: "reply-egress",
  description: "reply sender latency per post (claim, open secret, guarded fetch via octokit, outcome write) vs raw fetch of the same post",
  budgetMs: { full: 60_000, quick: 25_000 },
  async run(ctx) {
    const sizes = SIZES[ctx.quick ? "quick" : "full"];
    const db = await ctx.createScratchDatabase();
    const token = `ghp_bench${randomBytes(16).toString("hex")}`;
    const forge = await startProviderStub("github", { token });
    ctx.defer(() => forge.close());
    const host = new URL(forge.origin).host;
    const cipher = createSecretCipher([{ id: "bench", key: randomBytes(32) }])!;
    await createTenant(stores.tenants, db.pool, { orgId: ORG, name: ORG });
    await submitWorkflow(db.pool, ORG, parseWorkflowDefinition(`name: answer\nsteps:\n  - { id: answer, to: "role:answerer" }\n`));
    const connection = await addConnection(stores, db.pool, cipher, ORG, { kind: "github", accountKey: host, apiBaseUrl: forge.apiBaseUrl, secret: token }, { actor: "bench" });
    const sender = createReplySender({
      pool: db.pool,
      store: createPostgresReplyStore(),
      connections: stores.connections,
      cipher,
      egress: { allowedNetworks: ["127.0.0.0/8"], connectTimeoutMs: defaultConfig.foreign.connectTimeoutMs, maxResponseBytes: defaultConfig.foreign.maxResponseBytes },
      timeoutMs: 5_000,
      dialAttempts: 1,
      // Only runOnce() dials here: the periodic job never starts.
      intervalMs: 3_600_000,
    });
    ctx.defer(() => sender.close());
    const address = { kind: "forge_comment", forge: "github", host, repository: "acme/app", number: 7 };

    const pendingReply = async (): Promise<void> => {
      const taskId = randomUUID();
      await db.pool.query(
        `INSERT INTO tasks (id, org_id, workflow_name, workflow_version, input, status, reply_to) VALUES ($1, $2, 'answer', 1, '{}', 'running', $3)`,
        [taskId, ORG, JSON.stringify(address)],
      );
      await db.pool.query(
        `INSERT INTO origin_replies (id, org_id, task_id, step_id, attempt, request_id, actor, idempotency_key, connection_id, state, address_kind,
                                     address_display, text, text_sha256, next_attempt_at)
         VALUES ($1, $2, $3, 'answer', 1, $4, 'worker:role:answerer', $4, $5, 'pending', 'forge_comment', $6, $7, 'bench', now())`,
        [randomUUID(), ORG, taskId, randomUUID(), connection.id, `${host}/acme/app#7`, TEXT],
      );
    };
    const viaSender = async (): Promise<void> => {
      const dialed = await sender.runOnce();
      if (dialed !== 1) throw new SwitchyardError(ErrorCode.Internal, `the sender dialed ${dialed} replies, expected 1`);
    };
    const url = `${forge.apiBaseUrl}/repos/acme/app/issues/7/comments`;
    const viaRaw = async (): Promise<void> => {
      const response = await fetch(url, {
        method: "POST",
        headers: { authorization: `token ${token}`, "content-type": "application/json; charset=utf-8", accept: "application/vnd.github+json" },
        body: JSON.stringify({ body: TEXT }),
      });
      if (response.status !== 201) throw new SwitchyardError(ErrorCode.Internal, `raw post answered ${response.status}`);
      await response.json();
    };

    const senderMs: number[] = [];
    const rawMs: number[] = [];
    const once = async (record: boolean): Promise<void> => {
      await pendingReply();
      let started = performance.now();
      await viaSender();
      if (record) senderMs.push(performance.now() - started);
      started = performance.now();
      await viaRaw();
      if (record) rawMs.push(performance.now() - started);
    };
    await ctx.phase(`warm-up: ${sizes.warmup} × both`, async () => {
      for (let i = 0; i < sizes.warmup && !ctx.signal.aborted; i++) await once(false);
    });
    await ctx.phase(`measure: ${sizes.calls} × both, alternating`, async () => {
      for (let i = 0; i < sizes.calls && !ctx.signal.aborted; i++) await once(true);
    });
    const { rows } = await db.pool.query<{ state: string; n: number }>("SELECT state, count(*)::int AS n FROM origin_replies GROUP BY state");
    const states = Object.fromEntries(rows.map((r) => [r.state, r.n]));
    if (rows.length !== 1 || states.sent === undefined) throw new SwitchyardError(ErrorCode.Internal, `replies not all sent: ${JSON.stringify(states)}`);
    const via = summarize(senderMs);
    const raw = summarize(rawMs);
    const r = (n: number): number => Math.round(n * 1000) / 1000;
    const measurement: Measurement = {
      name: "reply_added_ms",
      value: via.p50 - raw.p50,
      unit: "ms",
      extra: {
        calls: senderMs.length,
        sender_ms: { p50: r(via.p50), p90: r(via.p90), p99: r(via.p99), mean: r(via.mean), max: r(via.max) },
        raw_fetch_ms: { p50: r(raw.p50), p90: r(raw.p90), p99: r(raw.p99), mean: r(raw.mean), max: r(raw.max) },
        added_p99_ms: r(via.p99 - raw.p99),
        partial: ctx.signal.aborted,
      },
    };
    return [measurement];
  },
};

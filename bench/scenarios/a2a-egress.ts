/**
 * `egress_added_ms`: what the A2A adapter adds to one dispatch over a raw `fetch` of the same request.
 *
 * A local A2A agent (test/support/a2a-agents.ts, v1.0, `no-push`) on 127.0.0.1. The adapter path is what the sender
 * runs per bridge: the agent's channel (guarded fetch admitting 127.0.0.0/8, card cache, A2A client) resolves the
 * card (cached after the warm-up) and sends `SendMessage`. The raw path POSTs the very body and headers the client
 * sent (captured once through a recording fetch; only the message id changes per call) with Node's `fetch` to the
 * same URL. The two alternate call by call, sequentially, so drift on the box hits both alike.
 * `egress_added_ms` = p50(adapter) − p50(raw).
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { defaultConfig } from "../../src/config/index.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { AgentChannels } from "../../src/foreign/agent-channels.js";
import { createA2AClient, type ForeignStepMessage, type PushTarget } from "../../src/foreign/a2a/client.js";
import { startA2AAgent } from "../../test/support/a2a-agents.js";
import { summarize, type Measurement, type Scenario } from "../support.js";

const SIZES = { full: { warmup: 200, calls: 2_000 }, quick: { warmup: 50, calls: 300 } };
const ORG = "bench-egress";
const AGENT = "helper";

export const a2aEgressScenario: Scenario = {
  name: "a2a-egress",
  description: "A2A adapter latency per dispatch (guarded fetch + card cache + client) vs raw fetch of the same request",
  budgetMs: { full: 40_000, quick: 20_000 },
  async run(ctx) {
    const sizes = SIZES[ctx.quick ? "quick" : "full"];
    const agent = await startA2AAgent({ dialect: "1.0", behaviour: "no-push" });
    ctx.defer(() => agent.close());
    const host = new URL(agent.baseUrl);
    const foreign = { ...defaultConfig.foreign, allowedNetworks: ["127.0.0.0/8"] };
    const channels = new AgentChannels({ foreign });
    const record = { orgId: ORG, agentKey: AGENT, credentialRef: null, allowHost: `${host.hostname}:${host.port}` };
    const push: PushTarget = { url: "http://127.0.0.1:9/api/v1/a2a/callback/x?t=bench", token: "bench-notification-token" };
    const message = (): ForeignStepMessage => ({ taskId: randomUUID(), stepId: "ask", orgId: ORG, clearanceFloor: 0, input: { text: "hello" }, messageId: randomUUID() });

    const viaAdapter = async (): Promise<void> => {
      const channel = channels.get(record);
      const card = await channel.cards.get(ORG, AGENT, { baseUrl: agent.baseUrl, requireSkill: ["echo"], requirePush: true, protocol: "auto" });
      await channel.client.send({ card, protocol: card.protocol, message: message(), push });
    };

    // The exact request the client sends, recorded once through plain fetch.
    let captured: { url: string; method: string; headers: Record<string, string>; body: string } | undefined;
    const recording: typeof fetch = async (input, init) => {
      const req = new Request(input, init);
      if (req.method === "POST") captured = { url: req.url, method: req.method, headers: Object.fromEntries(req.headers), body: await req.clone().text() };
      return fetch(req);
    };
    const card = await channels.get(record).cards.get(ORG, AGENT, { baseUrl: agent.baseUrl, requireSkill: ["echo"], requirePush: true });
    const first = message();
    await createA2AClient({ fetch: recording }).send({ card, protocol: card.protocol, message: first, push });
    if (!captured) throw new SwitchyardError(ErrorCode.Internal, "the A2A client sent no POST");
    const request = captured;
    const viaRaw = async (): Promise<void> => {
      const body = request.body.split(first.messageId!).join(randomUUID());
      const response = await fetch(request.url, { method: request.method, headers: request.headers, body });
      if (!response.ok) throw new SwitchyardError(ErrorCode.Internal, `raw SendMessage answered ${response.status}`);
      const answer = (await response.json()) as { error?: unknown };
      if (answer.error) throw new SwitchyardError(ErrorCode.Internal, `raw SendMessage failed: ${JSON.stringify(answer.error)}`);
    };

    const adapterMs: number[] = [];
    const rawMs: number[] = [];
    const time = async (fn: () => Promise<void>, into?: number[]): Promise<void> => {
      const started = performance.now();
      await fn();
      into?.push(performance.now() - started);
    };
    await ctx.phase(`warm-up: ${sizes.warmup} × both`, async () => {
      for (let i = 0; i < sizes.warmup && !ctx.signal.aborted; i++) {
        await time(viaAdapter);
        await time(viaRaw);
      }
    });
    await ctx.phase(`measure: ${sizes.calls} × both, alternating`, async () => {
      for (let i = 0; i < sizes.calls && !ctx.signal.aborted; i++) {
        await time(viaAdapter, adapterMs);
        await time(viaRaw, rawMs);
      }
    });
    const adapter = summarize(adapterMs);
    const raw = summarize(rawMs);
    const r = (n: number): number => Math.round(n * 1000) / 1000;
    const measurement: Measurement = {
      name: "egress_added_ms",
      value: adapter.p50 - raw.p50,
      unit: "ms",
      extra: {
        calls: adapterMs.length,
        adapter_ms: { p50: r(adapter.p50), p90: r(adapter.p90), p99: r(adapter.p99), mean: r(adapter.mean), max: r(adapter.max) },
        raw_fetch_ms: { p50: r(raw.p50), p90: r(raw.p90), p99: r(raw.p99), mean: r(raw.mean), max: r(raw.max) },
        added_p99_ms: r(adapter.p99 - raw.p99),
        card_requests: agent.cardRequests(),
        body_bytes: Buffer.byteLength(request.body),
        partial: ctx.signal.aborted,
      },
    };
    return [measurement];
  },
};

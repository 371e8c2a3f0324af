/**
 * One tenant's slow foreign agent must not stall another tenant's FOREIGN hops (issue 26 §1). Two coordinator
 * runtimes on one database and bus, each with a small send pool (8 slots, a tenant's share 2 of them). Tenant `drip` calls an MCP tool that never answers but reports progress every 200 ms; tenant `hang` calls
 * an A2A agent whose SendMessage is never answered. Both start more tasks than their shares. Tenant `victim`'s MCP
 * hops must keep their latency (at most twice the latency measured alone, in this run), and cancelling the
 * attackers' tasks must abort their calls: the tool sees its requests go away and no call stays in flight.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Coordinator } from "../../../src/coordinator/coordinator.js";
import { createRuntime, type Runtime } from "../../../src/runtime.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { startMcpServer, type RunningMcpServer } from "../../support/mcp-server.js";
import { waitForProgress } from "../../support/wait.js";
import { coordinatorOf, createForeignRuntime, type ForeignTestRuntime } from "../integration/support.js";

const ATTACK_TASKS = 6;
const VICTIM_HOPS = 3;

describe("FOREIGN send pool: one tenant's slow agent", () => {
  let rt: ForeignTestRuntime | undefined;
  let second: Runtime | undefined;
  let secondCoordinator: Coordinator | undefined;
  const agents: RunningA2AAgent[] = [];
  const tools: RunningMcpServer[] = [];

  afterEach(async () => {
    await secondCoordinator?.close();
    await second?.close();
    await Promise.all([...agents.splice(0), ...tools.splice(0)].map((a) => a.close()));
    await rt?.cleanup();
    rt = second = secondCoordinator = undefined;
  });

  it("slows only its own tenant, with two coordinators; cancelling its tasks aborts the calls", async () => {
    // 8 slots, a tenant's share 25 % = 2 per coordinator: the attackers can hold 4 + 4 of the 16, never all.
    rt = await createForeignRuntime({ sendConcurrency: 8, tenantSendPercent: 25 });
    const dripping = await startMcpServer({ slowMs: 10 * 60_000, progressEveryMs: 200 });
    const fast = await startMcpServer();
    const hanging = await startA2AAgent({ dialect: "1.0", behaviour: "hang" });
    tools.push(dripping, fast);
    agents.push(hanging);
    await rt.register("drip", { agentKey: "tool", baseUrl: dripping.url, protocol: "mcp", tool: "slow", skills: [] });
    await rt.register("hang", { agentKey: "agent", baseUrl: hanging.baseUrl });
    await rt.register("victim", { agentKey: "tool", baseUrl: fast.url, protocol: "mcp", tool: "echo", skills: [] });
    await rt.submit("drip", `name: w\nsteps:\n  - { id: a, to: "foreign:tool", timeout: 60s }\n`);
    await rt.submit("hang", `name: w\nsteps:\n  - { id: a, to: "foreign:agent", timeout: 60s }\n`);
    await rt.submit("victim", `name: w\nsteps:\n  - { id: a, to: "foreign:tool", timeout: 20s }\n`);
    second = await createRuntime(rt.config);
    secondCoordinator = coordinatorOf(second, "second");
    void secondCoordinator.start();
    rt.startCoordinator();
    const senders = [rt.a2a!.sender, second.a2a!.sender];

    const victimHop = async (): Promise<number> => {
      const started = Date.now();
      const { taskId } = await rt!.tasks.start({ orgId: "victim", workflow: "w", input: {} });
      const view = await rt!.finished("victim", taskId);
      expect(view.status, `victim task ${taskId}`).toBe("completed");
      return Date.now() - started;
    };
    // Warm both coordinators' channels, then measure alone.
    await victimHop();
    const alone = median(await sequence(VICTIM_HOPS, victimHop));

    const attackers: Array<{ orgId: string; taskId: string }> = [];
    for (const orgId of ["drip", "hang"]) {
      for (let i = 0; i < ATTACK_TASKS; i++) attackers.push({ orgId, taskId: (await rt.tasks.start({ orgId, workflow: "w", input: { i } })).taskId });
    }
    // Each coordinator fills the attackers' shares (2 + 2) and keeps the rest of its slots for everyone else.
    await waitForProgress({
      what: "the attackers' calls to fill their shares on both coordinators",
      progress: async () => ({ inFlight: senders.map((s) => s.inFlight), dripping: dripping.slowRunning }),
      done: (s) => s.inFlight.every((n) => n === 4) && s.dripping === 4,
    });
    const underAttack = median(await sequence(VICTIM_HOPS, victimHop));
    // Twice the latency alone, plus 100 ms for the scheduling noise of a hop measured in tens of milliseconds.
    expect(underAttack, `victim hop: ${underAttack} ms under attack vs ${alone} ms alone`).toBeLessThanOrEqual(2 * alone + 100);
    // The shares held: no attacker's call beyond them was made.
    expect(dripping.callsOf("slow")).toBe(4);
    expect(hanging.received.length).toBe(4);

    // Cancelled one by one, so a slot one cancellation frees may go to an attacker task not cancelled yet (its
    // bridge is due and its share has room again): that call is made, and must be aborted like the others.
    for (const { orgId, taskId } of attackers) await rt.tasks.cancel(orgId, taskId, "test", "attack over");
    const drained = await waitForProgress({
      what: "the cancelled tasks' calls to be aborted",
      progress: async () => ({ inFlight: senders.map((s) => s.inFlight), dripping: dripping.slowRunning, aborted: dripping.slowAborted }),
      done: (s) => s.inFlight.every((n) => n === 0) && s.dripping === 0,
    });
    expect(drained.aborted, "the tool saw every call of a cancelled task go away").toBe(dripping.callsOf("slow"));
    // At most one call per task: a cancelled task's bridge is never sent again.
    expect(dripping.callsOf("slow")).toBeLessThanOrEqual(ATTACK_TASKS);
    expect(hanging.received.length).toBeLessThanOrEqual(ATTACK_TASKS);
  });
});

async function sequence(n: number, run: () => Promise<number>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await run());
  return out;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

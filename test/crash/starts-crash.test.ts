/**
 * Task starts through the shard owner survive a coordinator crash (issue 11 §2): several clients start tasks through
 * a real gateway process while two coordinator processes share the shards and one of them, picked at random, is
 * SIGKILLed and restarted, several times. Afterwards every started task has completed, every task has exactly one
 * `dispatch` audit row for its first step (no start lost, none applied twice), nothing is dead-lettered, and each
 * tenant's audit chain verifies.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { seededRandom } from "../../faults/random.js";
import { createApiTransport } from "../../src/cli/remote/transport.js";
import { inboxOf } from "../../src/bus/shards.js";
import { TaskService } from "../../src/gen/switchyard/api/v1/tasks_pb.js";
import { toValue } from "../../src/gateway/convert/values.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { createTenantWithKey } from "../../src/tenancy/bootstrap.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { TEST_BUS_SECRET_ENV } from "../support/bus-auth.js";
import { FAST_RECOVERY_ENV, FLAGS_ON_ENV } from "../support/env.js";
import { freePort } from "../support/ports.js";
import { kill, spawnCli, type ManagedProcess } from "../support/processes.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { waitForProgress, waitForTasks } from "../support/wait.js";

/** Tenants spread over shards, so both coordinators own some of them. */
const TENANTS = ["acme", "globex", "initech", "umbrella"];
const CLIENTS_PER_TENANT = 2;
const STARTS_PER_CLIENT = 60;
/** Calls each client has in flight at once: concurrent starts of one tenant share a batch. */
const IN_FLIGHT = 4;
const KILL_ROUNDS = 4;
const SHARDS = 8;

describe("starts crash test", () => {
  let rt: TestRuntime;
  const processes = new Map<string, ManagedProcess>();
  let env: Record<string, string>;
  let gatewayUrl: string;
  const keys = new Map<string, string>();

  beforeAll(async () => {
    rt = await createTestRuntime();
    const port = await freePort();
    gatewayUrl = `http://127.0.0.1:${port}`;
    env = {
      ...FLAGS_ON_ENV,
      ...FAST_RECOVERY_ENV,
      DATABASE_URL: rt.config.databaseUrl,
      REDIS_URL: rt.config.redisUrl,
      SWITCHYARD_KEY_PREFIX: rt.prefix,
      SWITCHYARD_BUS_SECRET: TEST_BUS_SECRET_ENV,
      SWITCHYARD_LOG_LEVEL: "warn",
      SWITCHYARD_SHARD_COUNT: String(SHARDS),
      SWITCHYARD_SHARD_LEASE_TTL_MS: "2000",
      SWITCHYARD_STEP_TIMEOUT_MS: "60000",
      SWITCHYARD_GATEWAY_PORT: String(port),
    };
    // Steps time out after a minute: only the harness could need that, and it is never killed here, so each
    // first step is dispatched exactly once unless a start is applied twice.
    for (const orgId of TENANTS) {
      keys.set(orgId, (await createTenantWithKey(rt.stores, rt.pool, { orgId, name: orgId })).apiKey.secret);
      await submitWorkflow(
        rt.pool,
        orgId,
        parseWorkflowDefinition('name: two\nsteps:\n  - { id: one, to: "role:echo", retries: 10, backoff: 100ms, timeout: 60s }\n  - { id: two, to: "role:echo", needs: [one], retries: 10, backoff: 100ms, timeout: 60s }\n'),
      );
    }
  });

  afterAll(async () => {
    await Promise.all([...processes.values()].map((p) => kill(p)));
    await rt.cleanup();
  });

  function startProcess(name: string): ManagedProcess {
    const args = name.startsWith("coordinator")
      ? ["start", "coordinator"]
      : name === "gateway"
        ? ["start", "gateway"]
        : ["start", "harness", "--role", "echo", "--handler", "examples/handlers/echo.ts", "--concurrency", "20"];
    const proc = spawnCli(name, args, env);
    processes.set(name, proc);
    return proc;
  }

  const context = () => [...processes.values()].map((p) => `--- ${p.name} ---\n${p.output()}`).join("\n");

  it(`starts every task once through ${KILL_ROUNDS} coordinator SIGKILLs`, { timeout: 30 * 60_000 }, async () => {
    const seed = Number(process.env.CRASH_SEED ?? Date.now() % 100_000);
    const rand = seededRandom(seed);
    // The tenants do not all sit in one shard: a kill must leave some starts to the other coordinator.
    expect(new Set(TENANTS.map((t) => inboxOf(t, SHARDS))).size).toBeGreaterThan(1);
    startProcess("gateway");
    startProcess("coordinator-1");
    startProcess("coordinator-2");
    startProcess("harness");
    await waitForProgress({
      what: "the gateway to answer /healthz",
      progress: async () => {
        if (processes.get("gateway")!.child.exitCode !== null) throw new Error(`the gateway exited:\n${context()}`);
        return fetch(`${gatewayUrl}/healthz`).then((r) => r.status, () => 0);
      },
      done: (status) => status === 200,
      key: () => processes.get("gateway")!.output(),
      // Four processes booting under tsx on a loaded box are CPU-bound and silent for a while.
      stallMs: 120_000,
      describeStuck: () => context(),
    });

    // Clients keep starting tasks while the coordinators are killed, so every kill lands on starts in flight.
    const started: string[] = [];
    const clients = TENANTS.flatMap((orgId) =>
      Array.from({ length: CLIENTS_PER_TENANT }, async (_, c) => {
        const client = createClient(TaskService, createApiTransport({ url: gatewayUrl, token: keys.get(orgId)! }));
        let next = 0;
        await Promise.all(
          Array.from({ length: IN_FLIGHT }, async () => {
            while (next < STARTS_PER_CLIENT) {
              const n = next++;
              const answer = await client.start({ workflow: "two", input: toValue({ client: c, n }), idempotencyKey: `${orgId}:${c}:${n}` });
              started.push(answer.task!.id);
              if (n % 10 === 9) await new Promise((r) => setTimeout(r, 100));
            }
          }),
        );
      }),
    );
    const starting = Promise.all(clients);
    const startsAtKill: number[] = [];
    for (let round = 0; round < KILL_ROUNDS; round++) {
      await new Promise((r) => setTimeout(r, 800 + rand() * 1200));
      startsAtKill.push(started.length);
      const victim = rand() < 0.5 ? "coordinator-1" : "coordinator-2";
      await kill(processes.get(victim)!);
      await new Promise((r) => setTimeout(r, rand() * 1000));
      startProcess(victim);
    }
    await starting;
    const total = TENANTS.length * CLIENTS_PER_TENANT * STARTS_PER_CLIENT;
    expect(new Set(started).size).toBe(total);
    expect(startsAtKill.some((n) => n > 0 && n < total), `starts answered at each kill: ${startsAtKill.join(", ")} of ${total}; seed ${seed}`).toBe(true);

    await waitForTasks(rt.pool, { expected: total, stallMs: 60_000, intervalMs: 500 }).catch((error) => {
      throw new Error(`${(error as Error).message}\nseed ${seed}\n${context()}`);
    });
    const { rows: statuses } = await rt.pool.query<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM tasks GROUP BY status");
    expect(statuses, `seed ${seed}`).toEqual([{ status: "completed", n: total }]);
    // Exactly one dispatch of each task's first step: no start lost, none applied twice.
    const { rows: firsts } = await rt.pool.query<{ n: number; tasks: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT task_id)::int AS tasks FROM audit_log WHERE action = 'dispatch' AND step_id = 'one'`,
    );
    expect(firsts[0], `seed ${seed}`).toEqual({ n: total, tasks: total });
    const doubled = await rt.pool.query(
      "SELECT task_id, step_id, count(*)::int AS n FROM audit_log WHERE action = 'result' AND verdict = 'accepted' GROUP BY 1, 2 HAVING count(*) <> 1",
    );
    expect(doubled.rows, "steps with a doubled accepted result").toEqual([]);
    for (const orgId of TENANTS) {
      expect(await rt.bus.listDeadLetters(inboxOf(orgId, SHARDS)), `dead letters on ${orgId}'s inbox`).toEqual([]);
      expect(await verifyChain(rt.stores.audit, rt.pool, orgId)).toMatchObject({ ok: true });
    }
    expect(await rt.bus.listDeadLetters("role:echo")).toEqual([]);
  });
});

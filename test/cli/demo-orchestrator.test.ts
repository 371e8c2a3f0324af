/**
 * `switchyard demo orchestrator`: a separate process that must end by itself with exit 0 after one handler fanned
 * out to three specialists (two roles and the example A2A agent) and took their answers one turn at a time — and
 * whose output lets a newcomer see that: the sub-queries asked in one turn, each answer taken once in the order the
 * coordinator received it, the outstanding list shrinking to nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { redisUrl } from "../support/env.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";
import { hopRows, runDemoProcess } from "./demo-process.js";

let db: TestDatabase;
let redis: TestRedis;
beforeAll(async () => {
  db = await createTestDatabase();
  redis = await createTestRedis();
});
afterAll(async () => {
  await redis?.cleanup();
  await db?.drop();
});

const SPECIALISTS = { analysis: "role:analyst", critique: "role:critic", "fact-check": "foreign:fact-checker" } as const;

describe("switchyard demo orchestrator", () => {
  it("fans out to three specialists in one turn, takes each answer once in arrival order, gathers, drafts and exits 0", async () => {
    const env = { DATABASE_URL: db.url, REDIS_URL: redisUrl(), SWITCHYARD_KEY_PREFIX: redis.prefix };
    const result = await runDemoProcess(["demo", "orchestrator", "--timeout", "60", "--topic", "tide pools"], env, 80_000);
    const context = `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
    expect(result.signal, context).toBeNull();
    expect(result.code, context).toBe(0);
    const out = result.stdout;
    expect(out, context).toContain("gather-and-draft@1: gather → draft");
    expect(out, context).toMatch(/switching on .*BUS_ROUTED \(role:orchestrator\), A2A_EGRESS_ENABLED \(global, tenant:demo\)/);

    // Fan-out: one turn, three sub-queries, each on its own delegation step, all answered.
    expect(out, context).toMatch(/Fan-out: the orchestrator's first turn returned one ctx\.delegateAll with 3 sub-queries \(audited as `query` rows seq \d+, \d+, \d+\)/);
    const asked = new Map([...out.matchAll(/^\s+"([\w-]+)" → (\S+) as step (gather\.d\d+): completed$/gm)].map((m) => [m[1]!, { to: m[2]!, step: m[3]! }]));
    expect(Object.fromEntries([...asked].map(([id, a]) => [id, a.to])), context).toEqual(SPECIALISTS);

    // Fan-in, as the orchestrator saw it: one turn per answer, each answer once, one fewer outstanding each time.
    const turns = [...out.matchAll(/^\s+turn (\d+): took "([\w-]+)" \(ok, from (gather\.d\d+)\); (.*)$/gm)].map((m) => ({ turn: Number(m[1]), took: m[2]!, from: m[3]!, rest: m[4]! }));
    expect(turns, context).toHaveLength(3);
    expect(new Set(turns.map((t) => t.took)), context).toEqual(new Set(Object.keys(SPECIALISTS)));
    for (const t of turns) expect(t.from, context).toBe(asked.get(t.took)!.step);
    expect(turns.map((t) => t.turn), context).toEqual([...turns.map((t) => t.turn)].sort((a, b) => a - b));
    expect(new Set(turns.map((t) => t.turn)).size).toBe(3);
    const stillAwaited = turns.map((t) => [...t.rest.matchAll(/"([\w-]+)"/g)].map((m) => m[1]!));
    expect(stillAwaited.map((ids) => ids.length), context).toEqual([2, 1, 0]);
    // What is still awaited is exactly what the later turns take.
    turns.forEach((t, i) => expect(new Set(stillAwaited[i]), context).toEqual(new Set(turns.slice(i + 1).map((later) => later.took))));
    expect(turns[2]!.rest).toContain("nothing outstanding → read every answer with ctx.readResult, finished");

    // The hop table, read independently: a `query` row per sub-query on the origin, each its own governed hop,
    // the delegates' results in the order the orchestrator took them, and a REPLY per answer.
    const rows = hopRows(out).map((r) => r.split(/\s+/));
    const of = (action: string) => rows.filter((r) => r[2] === action);
    expect(of("query").filter((r) => r[1] === "gather" && r[6] === "builtin:query"), context).toHaveLength(3);
    // The two turns that kept waiting stood down with ctx.awaitMore, audited too.
    expect(of("query").filter((r) => r[1] === "gather" && r[6] === "builtin:await_more"), context).toHaveLength(2);
    for (const [id, to] of Object.entries(SPECIALISTS)) {
      const step = asked.get(id)!.step;
      const hop = to.startsWith("foreign:") ? "a2a_egress" : "sub_query";
      expect(rows.filter((r) => r[1] === step && r[2] === hop && r[4] === to && r[5] === "allow"), `${id}\n${context}`).toHaveLength(1);
    }
    const received = of("result").filter((r) => r[1]!.startsWith("gather.d")).map((r) => r[1]);
    expect(received, context).toEqual(turns.map((t) => t.from));
    expect(of("reply").filter((r) => r[1] === "gather" && r[4] === "role:orchestrator" && r[5] === "allow"), context).toHaveLength(3);
    // Serial turns: a REPLY goes to the orchestrator only after its previous turn stood down (a `query` row), and
    // its last turn's `result` follows the last REPLY.
    const originTrail = rows.filter((r) => r[1] === "gather" && ["query", "reply", "result"].includes(r[2]!)).map((r) => r[2]);
    originTrail.forEach((action, i) => {
      if (action === "reply") expect(originTrail[i - 1], `${originTrail.join(" ")}
${context}`).toBe("query");
    });
    expect(originTrail.at(-1)).toBe("result");
    expect(out, context).toMatch(/no answer arrived while a turn was running this time|gather\.d\d's answer \(seq \d+\) arrived while a turn was running: it waited in the step's checkpoint/);
    expect(out, context).toContain("(the delegates' `result` audit rows): the order the orchestrator was handed them");
    expect(rows.some((r) => r[1] === "draft" && r[2] === "result" && r[5] === "accepted"), context).toBe(true);

    expect(out, context).toMatch(/audit chain of tenant demo is intact: \d+ rows verified/);
    expect(out, context).toContain("Demo finished: three sub-queries asked at once");
  }, 90_000);
});

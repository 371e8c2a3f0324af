/**
 * The layering of `src/`, checked on its import graph (every relative `import … from`, `export … from` and
 * `import("…")`), so a change that runs an arrow the wrong way fails here rather than in a reader's head.
 *
 * Two kinds of rule. A rule that holds: the folder imports only what it lists. A rule issue 27 asks for that does
 * not hold yet: the edges that break it today are listed, and the list may only shrink — a new edge of that kind
 * fails, and one that is gone must be struck from the list (so the list stays the truth about what is left).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = join(dirname(fileURLToPath(import.meta.url)), "../../src");
/** A relative import that loads the module at run time (not `import type …`). */
const VALUE_IMPORT = /(?:^|[\s;])import\s+(?!type\s)[^;]*?from\s*["'](\.{1,2}\/[^"']+)["']/g;
const IMPORT = /(?:^|[\s;])(?:import|export)\s[^;]*?from\s*["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;

/** Every module of src/ (generated code aside) with the src-relative modules it imports (`.ts`). */
function importGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (relative(SRC, path) !== "gen") walk(path);
      } else if (entry.name.endsWith(".ts")) {
        const from = relative(SRC, path);
        const targets = new Set<string>();
        for (const match of readFileSync(path, "utf8").matchAll(IMPORT)) {
          const spec = match[1] ?? match[2]!;
          targets.add(normalize(join(dirname(from), spec)).replace(/\.js$/, ".ts"));
        }
        graph.set(from, targets);
      }
    }
  };
  walk(SRC);
  return graph;
}

const graph = importGraph();
/** `bus/codec.ts` → `bus`; a root file is its own name. */
const areaOf = (module: string): string => (module.includes("/") ? module.split("/")[0]! : module.replace(/\.ts$/, ""));

/** Edges `from → to` whose source is in `area`, to another area, as `from -> to`. */
function edgesOutOf(area: string): string[] {
  const out: string[] = [];
  for (const [from, targets] of graph) {
    if (areaOf(from) !== area) continue;
    for (const to of targets) if (areaOf(to) !== area) out.push(`${from} -> ${to}`);
  }
  return out.sort();
}

function importsOutside(area: string, allowed: readonly string[]): string[] {
  return edgesOutOf(area).filter((edge) => !allowed.includes(areaOf(edge.split(" -> ")[1]!)));
}

describe("layering of src/", () => {
  it("reads every module (the graph is not empty by accident)", () => {
    expect(graph.size).toBeGreaterThan(300);
    expect(graph.get("runtime.ts")?.has("config/index.ts")).toBe(true);
  });

  it("keeps only composition roots and shared leaves at the root of src/; process plumbing lives in process/", () => {
    const root = [...graph.keys()].filter((m) => !m.includes("/")).sort();
    expect(root).toEqual([
      "coordinator-process.ts",
      "domain.ts",
      "edit-distance.ts",
      "errors.ts",
      "json-depth.ts",
      "logger.ts",
      "package-paths.ts",
      "read-body.ts",
      "runtime.ts",
      "sleep.ts",
      "stable-json.ts",
    ]);
  });

  it("has leaves that import nothing of src/: errors, domain, the JSON depth check", () => {
    for (const leaf of ["errors.ts", "domain.ts", "json-depth.ts", "stable-json.ts", "sleep.ts"]) expect([...graph.get(leaf)!], leaf).toEqual([]);
  });

  it("keeps the state machine pure: src/core/ imports only domain, errors, stable-json and workflow/ (and no package but node:crypto)", () => {
    expect(importsOutside("core", ["domain", "errors", "stable-json", "workflow"])).toEqual([]);
    const packages = [...graph.keys()]
      .filter((m) => areaOf(m) === "core")
      .flatMap((m) => [...readFileSync(join(SRC, m), "utf8").matchAll(/from\s*["']([^."'][^"']*)["']/g)].map((x) => x[1]!));
    expect([...new Set(packages)]).toEqual(["node:crypto"]);
  });

  it("keeps the bus on the ground floor: it imports no coordinator, store, feature, gateway, CLI or harness", () => {
    expect(importsOutside("bus", ["domain", "errors", "logger", "gen", "metrics", "process"])).toEqual([]);
  });

  it("keeps process plumbing below the features", () => {
    expect(importsOutside("process", ["errors", "logger", "sleep", "bus", "metrics", "store"])).toEqual([]);
  });

  it("keeps the dev tools (demos, dev stack, example handlers) out of the product: only the CLI's commands load them", () => {
    const users = [...graph].filter(([from, targets]) => areaOf(from) !== "devtools" && [...targets].some((to) => areaOf(to) === "devtools")).map(([from]) => from);
    expect(users.sort()).toEqual(["cli/commands/demo.ts", "cli/commands/start.ts"]);
  });

  it("hands the coordinator what moves steps on from outside it: coordinator/ imports nothing of approvals/ or fairness/", () => {
    // Approval expiry is a SweepJob, the releaser a HeldReleases port, both handed in by the composition roots.
    const outOf = edgesOutOf("coordinator").map((edge) => areaOf(edge.split(" -> ")[1]!));
    expect(outOf.filter((area) => area === "approvals" || area === "fairness")).toEqual([]);
    expect(edgesOutOf("fairness").some((edge) => edge.includes(" -> coordinator/held-releases.ts"))).toBe(true);
  });

  it("hands the engine its storage through ports (issue 27 §2): what decides a batch loads no module that runs SQL", () => {
    // Type imports load nothing; a value import of a module with a query in it is an adapter the engine reaches
    // around its ports (store/engine/engine-store.ts, wired by runtime.ts from store/engine/postgres-engine-store.ts).
    const runsSql = (module: string): boolean => /\.query[<(]/.test(readFileSync(join(SRC, module), "utf8"));
    const engineModules = ["coordinator/engine.ts", "coordinator/reply-batch.ts", "coordinator/engine-types.ts", ...[...graph.keys()].filter((m) => areaOf(m) === "core")];
    const loaded = engineModules.flatMap((from) =>
      [...readFileSync(join(SRC, from), "utf8").matchAll(VALUE_IMPORT)].map((match) => `${from} -> ${normalize(join(dirname(from), match[1]!)).replace(/\.js$/, ".ts")}`),
    );
    expect(loaded.length).toBeGreaterThan(20);
    // Tracing reads its spans' root contexts itself, and only when tracing is on.
    expect(loaded.filter((edge) => runsSql(edge.split(" -> ")[1]!))).toEqual(["coordinator/engine.ts -> telemetry/hop-spans.ts"]);
    expect(graph.get("coordinator/engine.ts")?.has("store/engine/engine-store.ts")).toBe(true);
    expect(graph.get("runtime.ts")?.has("store/engine/postgres-engine-store.ts")).toBe(true);
  });

  it("ratchet (issue 27 §2): the modules that run SQL outside store/, counted by area, only go down", () => {
    // Each count drops as its concern gets a port in store/ with the Postgres adapter beside it (the engine's
    // are in store/engine/); a new module with a query in a feature folder fails here.
    const counts: Record<string, number> = {};
    for (const module of graph.keys()) {
      if (areaOf(module) === "store" || !/\.query[<(]/.test(readFileSync(join(SRC, module), "utf8"))) continue;
      counts[areaOf(module)] = (counts[areaOf(module)] ?? 0) + 1;
    }
    expect(counts).toEqual(BASELINE_SQL_MODULES_BY_AREA);
  });

  it("keeps the task service above the coordinator process: coordinator/ imports nothing of tasks/", () => {
    expect(edgesOutOf("coordinator").filter((edge) => areaOf(edge.split(" -> ")[1]!) === "tasks")).toEqual([]);
    expect(edgesOutOf("tasks").some((edge) => edge.includes(" -> coordinator/engine.ts"))).toBe(true);
  });

  it("keeps workers apart from the coordinator process: harness/ imports nothing of coordinator/ (shard routing is bus/shards.ts)", () => {
    expect(edgesOutOf("harness").filter((edge) => areaOf(edge.split(" -> ")[1]!) === "coordinator")).toEqual([]);
    expect(edgesOutOf("harness").some((edge) => edge.includes(" -> bus/shards.ts"))).toBe(true);
  });

  it("keeps database credentials out of workers: harness/ imports nothing of store/ (issue 27 §3)", () => {
    expect(edgesOutOf("harness").filter((edge) => edge.split(" -> ")[1]!.startsWith("store/"))).toEqual([]);
    // The ports a harness gets its answers through are fed over Redis.
    expect(edgesOutOf("harness")).toContain("harness/process.ts -> flags/mirrored-flags.ts");
    expect(edgesOutOf("harness")).toContain("harness/process.ts -> replies/redis-reply-outcome.ts");
  });

  it("ratchet (issue 27 §4): what cli/commands reach besides the client and output helpers only shrinks", () => {
    const reach = new Set(edgesOutOf("cli").filter((edge) => edge.startsWith("cli/commands/")).map((edge) => areaOf(edge.split(" -> ")[1]!)));
    expect([...reach].sort()).toEqual(BASELINE_CLI_COMMANDS_REACH);
  });
});

/**
 * The areas `src/cli/commands/*` import today; issue 27 §4 wants the client and the output helpers only. The tenant
 * commands (workflow, task, approval, audit verify/list) and the admin commands with a service (tenant, apikey,
 * dlq, flags, limits, connection, ingest, foreign) reach only the clients in cli/remote/, which run the gateway's
 * handlers in-process in direct mode; what is left belongs to the commands without a service (policy, vault,
 * shards, bus, approval links, audit checkpoints) and to the ones that start processes (start, demo, gateway,
 * migrate).
 */
const BASELINE_CLI_COMMANDS_REACH = [
  "approvals",
  "bus",
  "config",
  "coordinator",
  "coordinator-process",
  "devtools",
  "errors",
  "gateway",
  "governance",
  "harness",
  "logger",
  "metrics",
  "process",
  "services",
  "store",
  "telemetry",
  "tenancy",
  "vault",
];

/** Modules outside store/ with a query in them, by area, today; issue 27 §2 wants them behind ports in store/. */
const BASELINE_SQL_MODULES_BY_AREA: Record<string, number> = {
  cli: 1,
  coordinator: 5,
  diagnosis: 1,
  fairness: 1,
  foreign: 1,
  gateway: 5,
  governance: 3,
  ingest: 1,
  metrics: 1,
  process: 1,
  sdk: 2,
  services: 1,
  tasks: 2,
  telemetry: 1,
  tenancy: 2,
  vault: 3,
};

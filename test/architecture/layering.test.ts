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
const IMPORT = /(?:^|[\s;])(?:import|export)\s[^;]*?from\s*["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)|(?:^|[\s;])import\s*["'](\.{1,2}\/[^"']+)["']/g;

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
          const spec = match[1] ?? match[2] ?? match[3]!;
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
    expect(loaded.filter((edge) => runsSql(edge.split(" -> ")[1]!))).toEqual([]);
    expect(graph.get("coordinator/engine.ts")?.has("store/engine/engine-store.ts")).toBe(true);
    expect(graph.get("runtime.ts")?.has("store/engine/postgres-engine-store.ts")).toBe(true);
    // Tracing's root contexts too: read through the engine's TraceRootStore, only when tracing is on.
    expect(graph.get("store/engine/postgres-engine-store.ts")?.has("store/telemetry/postgres-trace-root-store.ts")).toBe(true);
  });

  it("hands the coordinator process its storage through ports (issue 27 §2): coordinator/ loads no module that runs SQL and of store/ only ports", () => {
    // A value import, value re-export or import() loads a module; a type import does not.
    const runsSql = (module: string): boolean => /\.query[<(]/.test(readFileSync(join(SRC, module), "utf8"));
    const LOADS = /(?:^|[\s;])(?:import|export)\s+(?!type\s)[^;]*?from\s*["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;
    const coordinator = [...graph.keys()].filter((m) => areaOf(m) === "coordinator");
    const loaded = coordinator.flatMap((from) =>
      [...readFileSync(join(SRC, from), "utf8").matchAll(LOADS)].map((match) => `${from} -> ${normalize(join(dirname(from), match[1] ?? match[2]!)).replace(/\.js$/, ".ts")}`),
    );
    expect(loaded.length).toBeGreaterThan(50);
    expect(coordinator.filter(runsSql)).toEqual([]);
    expect(loaded.filter((edge) => runsSql(edge.split(" -> ")[1]!) || edge.split(" -> ")[1]!.startsWith("store/"))).toEqual([]);
    // Type imports of store/: the types-only ports (store/<concern>/<concern>-store.ts) and the connection types (db.ts).
    const isPort = (to: string): boolean => to === "store/db.ts" || (to.endsWith("-store.ts") && !to.split("/").pop()!.startsWith("postgres-"));
    const typeOnly = edgesOutOf("coordinator").filter((edge) => !loaded.includes(edge));
    expect(typeOnly.filter((edge) => edge.split(" -> ")[1]!.startsWith("store/") && !isPort(edge.split(" -> ")[1]!))).toEqual([]);
    expect(graph.get("coordinator/coordinator.ts")?.has("store/coordinator/coordinator-store.ts")).toBe(true);
    expect(graph.get("store/postgres-stores.ts")?.has("store/coordinator/postgres-coordinator-store.ts")).toBe(true);
  });

  it("keeps SQL in store/ (issue 27 §2): no module outside store/ runs a query except the listed process plumbing", () => {
    // Every concern's queries sit behind its port in store/<concern>/ with the Postgres adapter beside it (the
    // engine's in store/engine/); a module with a query in a feature folder fails here.
    const outside = [...graph.keys()].filter((m) => areaOf(m) !== "store" && /\.query[<(]/.test(readFileSync(join(SRC, m), "utf8")));
    expect(outside.sort()).toEqual(SQL_PROCESS_PLUMBING);
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

  it("keeps the CLI's commands on the client (issue 27 §4): cli/commands reach only cli/ and errors, the process starters only what starts a process", () => {
    const reachOf = (command: string): string[] => [...(graph.get(`cli/commands/${command}.ts`) ?? [])].filter((to) => areaOf(to) !== "cli").sort();
    const commands = [...graph.keys()].filter((m) => m.startsWith("cli/commands/")).map((m) => m.slice("cli/commands/".length, -".ts".length));
    expect(commands.length).toBeGreaterThan(15);
    // Every command that works on a running system calls a client in cli/remote/ (the gateway's handlers, in-process
    // in direct mode) and prints with cli/output.ts.
    const onTheClient = commands.filter((c) => !(c in STARTERS) && c !== "bus");
    expect(onTheClient.flatMap((c) => reachOf(c).filter((to) => to !== "errors.ts").map((to) => `cli/commands/${c}.ts -> ${to}`))).toEqual([]);
    // `bus key` derives a publisher key from the operator's own secret: a pure function, no service to ask.
    expect(reachOf("bus")).toEqual(["bus/auth/bus-keys.ts", "errors.ts"]);
    expect([...graph.get("bus/auth/bus-keys.ts")!]).toEqual(["errors.ts"]);
    // The starters are where a process is composed: each may load only the roots and plumbing listed for it.
    for (const [starter, allowed] of Object.entries(STARTERS)) expect({ [starter]: reachOf(starter).filter((to) => !allowed.includes(to)) }).toEqual({ [starter]: [] });
  });
});

/**
 * The commands that start a process (or, for migrate, run the one-off job that readies the database), with what
 * each may load: composition roots (coordinator-process, gateway/server, harness/process, devtools), the process
 * plumbing they are started with, and telemetry's start-up. Adding to a list is a decision a reviewer sees here.
 */
const STARTERS: Record<string, readonly string[]> = {
  start: [
    "bus/keys.ts",
    "config/index.ts",
    "coordinator-process.ts",
    "devtools/dev-stack.ts",
    "devtools/example-handlers.ts",
    "errors.ts",
    "harness/process.ts",
    "logger.ts",
    "metrics/metrics-server.ts",
    "process/process-guard.ts",
    "process/readiness.ts",
    "services/resolve-local-services.ts",
    "store/migrate.ts",
    "telemetry/sdk.ts",
  ],
  demo: [
    "devtools/demo/run-demo.ts",
    "devtools/demo/run-mcp-demo.ts",
    "devtools/demo/run-orchestrator-demo.ts",
    "devtools/demo/run-origin-demo.ts",
    "errors.ts",
    "logger.ts",
    "services/resolve-local-services.ts",
    "telemetry/sdk.ts",
  ],
  gateway: ["bus/auth/bus-keys.ts", "gateway/server.ts", "process/process-guard.ts", "telemetry/sdk.ts"],
  migrate: ["process/service-endpoints.ts", "store/migrate.ts"],
};

/**
 * The modules outside store/ that may run SQL: process plumbing that talks to the database server, not to a
 * concern's rows (a liveness probe, the check that an embedded server answers). Adding to it is a decision a
 * reviewer sees here.
 */
const SQL_PROCESS_PLUMBING: readonly string[] = ["cli/context.ts", "process/readiness.ts", "services/embedded-postgres.ts"];

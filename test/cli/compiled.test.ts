/**
 * The compiled CLI (issue 12 §1): `bin/switchyard.js` runs the bundle in dist/bundle/ — JavaScript only, no tsx —
 * lists every command and option the TypeScript source does, loads no implementation module for `--help`, prints
 * the package version,
 * runs a real command against the test database, and writes nothing to the temp directory (a read-only root
 * filesystem in the image). Assumes `npm ci` (prepare) or `npm run build` has built dist/; fails, not skips, when not.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildProgram, runCli } from "../../src/cli/main.js";
import { ErrorCode, isSwitchyardError, SwitchyardError } from "../../src/errors.js";
import { errorInfoOf } from "../../src/harness/error-info.js";
import { APPROVAL_WORKFLOW, createCliEnvironment, type CliEnvironment } from "./helpers.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = join(ROOT, "bin", "switchyard.js");
const COMPILED_MAIN = join(ROOT, "dist", "bundle", "cli.js");
/** Which source modules each bundle file holds (scripts/bundle-cli.mjs writes it). */
const BUNDLE_META = join(ROOT, "dist", "bundle", "meta.json");

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function node(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Every command path and the full `--help` text of each, from a program's `runCli`. The same walk runs in-process
 * over the TypeScript source and inside one compiled child process, so the two can be compared whole.
 */
const HELP_WALK = `
  const paths = [];
  const walk = (cmd, path) => { paths.push(path); for (const sub of cmd.commands) walk(sub, [...path, sub.name()]); };
  walk(cli.buildProgram(), []);
  const help = {};
  for (const path of paths) {
    let text = "";
    const sink = { write: (t) => { text += t; return true; } };
    const code = await cli.runCli([...path, "--help"], { stdout: sink, stderr: sink, env: {} });
    help[path.join(" ")] = { code, text };
  }
`;

async function sourceHelp(): Promise<Record<string, { code: number; text: string }>> {
  const walk = new Function("cli", `return (async () => { ${HELP_WALK} return help; })();`) as (cli: unknown) => Promise<Record<string, { code: number; text: string }>>;
  return walk({ buildProgram, runCli });
}

async function compiledHelp(): Promise<Record<string, { code: number; text: string }>> {
  const script = `const cli = await import(${JSON.stringify(pathToFileURL(COMPILED_MAIN).href)}); ${HELP_WALK} process.stdout.write(JSON.stringify(help));`;
  const run = await node(["--input-type=module", "-e", script]);
  expect(run.stderr).toBe("");
  return JSON.parse(run.stdout) as Record<string, { code: number; text: string }>;
}

/**
 * Runs the bin with a module-loading hook that appends every module URL Node loads as ESM to a file, so a test
 * can tell what a command pulled in. (CommonJS packages reached from ESM show up by their entry module.)
 */
async function binLoading(args: string[], env: Record<string, string> = {}): Promise<Run & { loaded: string[] }> {
  const dir = await mkdtemp(join(tmpdir(), "sy-compiled-load-"));
  try {
    const log = join(dir, "loaded.txt");
    const hooks = `import { appendFileSync } from "node:fs";
      export async function load(url, context, next) { appendFileSync(${JSON.stringify(log)}, url + "\\n"); return next(url, context); }`;
    const register = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});`;
    const run = await node(["--import", `data:text/javascript,${encodeURIComponent(register)}`, BIN, ...args], env);
    const loaded = existsSync(log) ? (await readFile(log, "utf8")).split("\n").filter(Boolean) : [];
    return { ...run, loaded };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The modules behind loaded URLs: a bundle file stands for the source modules inside it (dist/bundle/meta.json,
 * paths relative to the repository), anything else for itself.
 */
async function modulesOf(urls: readonly string[]): Promise<string[]> {
  const meta = JSON.parse(await readFile(BUNDLE_META, "utf8")) as Record<string, string[]>;
  const modules: string[] = [];
  for (const url of urls) {
    const inBundle = url.split("/dist/bundle/")[1];
    if (inBundle === undefined) modules.push(url);
    else modules.push(...(meta[inBundle] ?? [`unknown bundle file ${inBundle}`]));
  }
  return modules;
}

/** The npm packages among loaded modules, bundled or not (`@scope/name` or `name`). */
async function packagesOf(urls: readonly string[]): Promise<string[]> {
  const names = new Set<string>();
  for (const module of await modulesOf(urls)) {
    const match = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(module);
    if (match) names.add(match[1]!);
  }
  return [...names].sort();
}

beforeAll(() => {
  if (!existsSync(COMPILED_MAIN)) {
    throw new Error(`dist/bundle/cli.js is missing: run \`npm run build\` (npm ci runs it through prepare) before these tests`);
  }
});

describe("compiled CLI: help and version", () => {
  it("--version prints the version in package.json", async () => {
    const manifest = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { version: string };
    const run = await node([BIN, "--version"]);
    expect(run).toMatchObject({ code: 0, stdout: `${manifest.version}\n`, stderr: "" });
  });

  it("lists every command and option, with the same help text as the TypeScript source", async () => {
    const [compiled, source] = await Promise.all([compiledHelp(), sourceHelp()]);
    expect(Object.keys(compiled).sort()).toEqual(Object.keys(source).sort());
    for (const path of Object.keys(source)) expect({ path, ...compiled[path] }).toEqual({ path, ...source[path] });
    // Nothing the CLI offered before it was compiled (8e20aa1) has gone missing.
    const before = JSON.parse(await readFile(join(ROOT, "test/cli/fixtures/help-8e20aa1.json"), "utf8")) as Record<string, string[]>;
    for (const [path, flags] of Object.entries(before)) {
      expect(compiled[path], `command "${path}"`).toBeDefined();
      for (const flag of flags) expect(compiled[path]!.text, `"${path}" option ${flag}`).toContain(flag);
    }
    expect(compiled[""]!.text).toContain("-V, --version");
  });

  it("switchyard --help through the bin loads commander and nothing else from node_modules, and never tsx", async () => {
    const run = await binLoading(["--help"]);
    expect(run.code).toBe(0);
    for (const command of Object.keys(await sourceHelp()).filter((p) => p !== "" && !p.includes(" "))) {
      expect(run.stdout).toMatch(new RegExp(`^  ${command}\\b`, "m"));
    }
    expect(run.loaded.some((url) => url.endsWith("/dist/bundle/cli.js"))).toBe(true);
    expect(await packagesOf(run.loaded)).toEqual(["commander"]);
    expect(run.loaded.filter((url) => !url.startsWith("node:") && !url.includes("/dist/bundle/") && !url.endsWith("/bin/switchyard.js"))).toEqual([]);
    // No implementation: the runtime, the engine, the generated protobuf code stay in chunks not loaded.
    const modules = await modulesOf(run.loaded);
    expect(modules.filter((m) => /dist\/src\/(runtime|coordinator\/engine|gen\/)/.test(m))).toEqual([]);
    expect(modules).toContain("dist/src/cli/main.js");
  });

  it("stops quietly when the reader closes the pipe (switchyard --help | head -1)", async () => {
    const child = spawn(process.execPath, [BIN, "--help"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    // Closed before the CLI writes: its first write meets a pipe with no reader (EPIPE).
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  });

  it("a usage error is reported without loading the implementation either", async () => {
    const run = await binLoading(["task", "start"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: INVALID_ARGUMENT: missing required argument 'workflow'/);
    expect(await packagesOf(run.loaded)).toEqual(["commander"]);
  });
});

describe("compiled CLI: handler modules", () => {
  it("loads a JavaScript handler as is, and a TypeScript one through tsx when tsx is installed (a checkout)", async () => {
    const process = pathToFileURL(join(ROOT, "dist", "src", "harness", "process.js")).href;
    const script = `const { loadHandler } = await import(${JSON.stringify(process)});
      const js = await loadHandler("dist/examples/handlers/echo.js");
      const ts = await loadHandler("examples/handlers/echo.ts");
      process.stdout.write(JSON.stringify([typeof js, typeof ts, js === ts]));`;
    const run = await node(["--input-type=module", "-e", script]);
    expect(run.stderr).toBe("");
    expect(JSON.parse(run.stdout)).toEqual(["function", "function", false]);
  });

  it("without tsx (the image, an installed package) a TypeScript handler is a CONFIG error that says to compile it", async () => {
    // A resolve hook that hides tsx, as `npm ci --omit=dev` does.
    const hooks = `export async function resolve(specifier, context, next) {
      if (specifier === "tsx" || specifier.startsWith("tsx/")) throw Object.assign(new Error("Cannot find package 'tsx'"), { code: "ERR_MODULE_NOT_FOUND" });
      return next(specifier, context);
    }`;
    const register = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});`;
    const process = pathToFileURL(join(ROOT, "dist", "src", "harness", "process.js")).href;
    const script = `const { loadHandler } = await import(${JSON.stringify(process)});
      try { await loadHandler("examples/handlers/echo.ts"); process.stdout.write("loaded"); }
      catch (error) { process.stdout.write(JSON.stringify({ code: error.code, message: error.message })); }`;
    const run = await node(["--import", `data:text/javascript,${encodeURIComponent(register)}`, "--input-type=module", "-e", script]);
    expect(JSON.parse(run.stdout)).toEqual({
      code: "CONFIG",
      message: `handler module ${join(ROOT, "examples/handlers/echo.ts")} is TypeScript and tsx is not installed: compile the handler to JavaScript (tsc) and pass the .js file`,
    });
  });
});

describe("compiled CLI: errors across copies of the code", () => {
  it("a SwitchyardError of another copy (a handler's switchyard/harness beside the CLI bundle) keeps its class and code", async () => {
    // dist/src/errors.js is one copy, the source this test imports another: what a handler and the bundle are.
    const compiled = (await import(pathToFileURL(join(ROOT, "dist", "src", "errors.js")).href)) as typeof import("../../src/errors.js");
    const thrown = new compiled.SwitchyardError(compiled.ErrorCode.InvalidArgument, "input is not an invoice");
    expect(compiled.SwitchyardError).not.toBe(SwitchyardError);
    expect(thrown instanceof SwitchyardError).toBe(true);
    expect(isSwitchyardError(thrown, ErrorCode.InvalidArgument)).toBe(true);
    expect(errorInfoOf(thrown)).toEqual({ code: "INVALID_ARGUMENT", message: "input is not an invoice", retryable: false });
    // The brand is not a name: an Error merely called SwitchyardError is still a handler failure.
    const impostor = Object.assign(new Error("nope"), { name: "SwitchyardError", code: "INVALID_ARGUMENT" });
    expect(impostor instanceof SwitchyardError).toBe(false);
    expect(errorInfoOf(impostor)).toMatchObject({ code: "HANDLER_FAILED", retryable: true });
  });
});

describe("compiled CLI: not built", () => {
  it("the bin says in one line that dist/ is missing and names npm run build", async () => {
    // A copy of the bin in a directory without dist/: what a checkout looks like before its first build.
    const dir = await mkdtemp(join(tmpdir(), "sy-unbuilt-"));
    try {
      await mkdir(join(dir, "bin"));
      await copyFile(BIN, join(dir, "bin", "switchyard.js"));
      const run = await node([join(dir, "bin", "switchyard.js"), "--help"]);
      expect(run).toMatchObject({ code: 1, stdout: "" });
      expect(run.stderr).toBe("error: CONFIG: switchyard is not built (dist/bundle/cli.js is missing): run `npm run build`\n");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("compiled CLI: a real command", () => {
  let cli: CliEnvironment;
  let scratch: string;

  beforeAll(async () => {
    cli = await createCliEnvironment();
    scratch = await mkdtemp(join(tmpdir(), "sy-compiled-tmp-"));
  });

  afterAll(async () => {
    await cli?.cleanup();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it("submits a workflow and starts a task with --json, loading no tsx and writing nothing to TMPDIR or HOME", async () => {
    const file = await cli.file("approval.yaml", APPROVAL_WORKFLOW);
    // TMPDIR and HOME point at an empty directory: tsx would put its cache there; compiled code has no reason to write.
    const env = { ...cli.env, TMPDIR: scratch, HOME: scratch };
    const submitted = await node([BIN, "workflow", "submit", join(cli.dir, file), "--tenant", "acme", "--json"], env);
    expect(submitted.stderr).toBe("");
    expect(JSON.parse(submitted.stdout)).toMatchObject({ name: "needs-approval", version: 1, created: true });

    const started = await binLoading(["task", "start", "needs-approval", "--tenant", "acme", "--json", "--input", '{"n":1}'], env);
    expect(started.code, started.stderr).toBe(0);
    const view = JSON.parse(started.stdout.trim().split("\n").at(-1)!) as { id: string; workflow: string; status: string; input: unknown };
    expect(view).toMatchObject({ workflow: "needs-approval@1", input: { n: 1 } });
    expect(["running", "parked"]).toContain(view.status);
    // The task is really there: the source CLI, in-process, reads it back from the database.
    const read = await cli.run(["task", "get", view.id, "--tenant", "acme", "--json"]);
    expect(read.code).toBe(0);
    expect(JSON.parse(read.last)).toMatchObject({ id: view.id, workflow: "needs-approval@1" });

    expect(started.loaded.filter((url) => url.includes("/node_modules/tsx/"))).toEqual([]);
    expect(started.loaded.filter((url) => /\/src\/.*\.ts$/.test(url))).toEqual([]);
    expect(await readdir(scratch)).toEqual([]);
  });

  it("a command's error keeps the CLI's form and exit code when compiled", async () => {
    const run = await node([BIN, "task", "get", "00000000-0000-4000-8000-000000000000", "--tenant", "acme", "--json"], cli.env);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ error: { code: "NOT_FOUND" } });
  });
});

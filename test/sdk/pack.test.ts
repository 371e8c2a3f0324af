/**
 * THE PACKED PACKAGE, AS A WORKER AUTHOR GETS IT. Opt-in and slow (a `npm run build`, a `npm pack`, an `npm install`
 * into a scratch project): runs only with SWITCHYARD_PACK_TEST=1. The install uses `--prefer-offline` (the npm cache
 * a `npm ci` left behind), so it reaches the registry only for what the cache lacks.
 *
 * Builds dist/, packs a staged copy of the package (its own `files`, without scripts or dev dependencies), installs
 * the tarball into `mktemp -d`, then typechecks and runs there a typed handler and its unit test that import only `switchyard/harness` and `switchyard/testing`, and a
 * workflow test on `createTestStack` (which needs REDIS_URL / DATABASE_URL or the local defaults).
 */
import { execFile } from "node:child_process";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const execFileAsync = promisify(execFile);

/** Runs a command; a failure carries its output, which is where tsc and npm say what went wrong. */
async function run(file: string, args: string[], options: { cwd: string }): Promise<{ stdout: string }> {
  try {
    return await execFileAsync(file, args, { ...options });
  } catch (error) {
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(" ")} failed in ${options.cwd}:\n${stdout}\n${stderr}`, { cause: error });
  }
}
const ROOT = new URL("../../", import.meta.url).pathname;
const ENABLED = process.env.SWITCHYARD_PACK_TEST === "1";
const SLOW_MS = 900_000;

const HANDLER = `import { NonRetryableError, type Handler } from "switchyard/harness";

export interface Order { item: string; quantity: number }

const price: Handler<Order, { total: number }> = (work, ctx) => {
  if (work.input.quantity <= 0) throw new NonRetryableError("cannot price " + work.input.quantity, { code: "BAD_QUANTITY" });
  ctx.usage({ cost: 0.1 });
  return { total: work.input.quantity * 2.5 };
};
export default price;
`;

const HANDLER_TEST = `import test from "node:test";
import assert from "node:assert/strict";
import { errorInfoOf, runHandler } from "switchyard/testing";
import price from "./handler.js";

test("prices an order", async () => {
  const run = await runHandler(price, { input: { item: "tea", quantity: 4 } });
  assert.deepEqual(run.output, { total: 10 });
  assert.equal(run.usage.cost, 0.1);
});

test("refuses a bad quantity without retries", async () => {
  const error = await runHandler(price, { input: { item: "tea", quantity: 0 } }).catch((e: unknown) => e);
  assert.deepEqual(errorInfoOf(error), { code: "BAD_QUANTITY", message: "cannot price 0", retryable: false });
});

test("types the input", async () => {
  // @ts-expect-error: quantity is missing, and Handler<Order> says so
  await runHandler(price, { input: { item: "tea" } }).catch(() => undefined);
});
`;

// skipLibCheck, as `tsc --init` sets it: the package's declarations name types of dependencies whose @types are
// devDependencies here (pg), which a worker project does not install.
const WORKFLOW_TEST = `import test from "node:test";
import assert from "node:assert/strict";
import type { Handler } from "switchyard/harness";
import { createTestStack } from "switchyard/testing";
import type { Order } from "./handler.js";

const pricer: Handler<{ task: Order }, { total: number }> = (work) => ({ total: work.input.task.quantity * 2.5 });

test("runs a workflow through the real coordinator on a scratch database", async () => {
  const stack = await createTestStack();
  try {
    await stack.submitWorkflow({ name: "order", steps: [{ id: "price", to: "role:pricer", output_schema: { type: "object", required: ["total"] } }] });
    stack.register("role:pricer", pricer);
    const task = await stack.runTask("order", { item: "tea", quantity: 4 });
    assert.equal(task.status, "completed");
    assert.deepEqual(task.steps[0]?.output, { total: 10 });
  } finally {
    await stack.close();
  }
});
`;

const TSCONFIG = { compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, outDir: "out", types: ["node"] }, include: ["*.ts"] };

describe.skipIf(!ENABLED)("the packed package (SWITCHYARD_PACK_TEST=1)", () => {
  const scratch: string[] = [];
  afterAll(async () => {
    await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it("installs into a scratch project, where a typed handler typechecks and its unit test passes", async () => {
    await run("npm", ["run", "build"], { cwd: ROOT });

    const stage = await mkdtemp(join(tmpdir(), "sy-pack-stage-"));
    const project = await mkdtemp(join(tmpdir(), "sy-pack-project-"));
    scratch.push(stage, project);
    const pkg = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as Record<string, unknown>;
    // The package's own `files`; no scripts (its `prepare` would build again) and no dev dependencies.
    const shipped = pkg.files as string[];
    const staged = { ...pkg, scripts: {}, devDependencies: {} };
    await writeFile(join(stage, "package.json"), JSON.stringify(staged, null, 2));
    for (const entry of shipped) await cp(join(ROOT, entry), join(stage, entry), { recursive: true });
    const packed = await run("npm", ["pack", "--json", "--pack-destination", stage], { cwd: stage });
    const { filename, files } = (JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>)[0]!;
    const paths = files.map((f) => f.path);
    expect(paths).toContain("dist/src/sdk/testing.d.ts");
    expect(paths).toContain("schemas/workflow.schema.json");
    expect(paths).toContain("dist/migrations/0001_core.sql");
    expect(paths).toContain("bin/switchyard.js");
    expect(paths.filter((p) => p.startsWith("src/") || p.startsWith("test/"))).toEqual([]);

    await writeFile(join(project, "package.json"), JSON.stringify({ name: "my-worker", private: true, type: "module" }));
    await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", join(stage, filename), "typescript@5.9.3", "@types/node@20.19.43"], { cwd: project });
    await writeFile(join(project, "tsconfig.json"), JSON.stringify(TSCONFIG));
    await writeFile(join(project, "handler.ts"), HANDLER);
    await writeFile(join(project, "handler.test.ts"), HANDLER_TEST);
    // Uses REDIS_URL / DATABASE_URL (inherited) or the local defaults, and the migrations shipped in the package.
    await writeFile(join(project, "workflow.test.ts"), WORKFLOW_TEST);

    // The installed command runs its bundle (dist/bundle/), dependencies from the project's node_modules.
    const bin = join(project, "node_modules/.bin/switchyard");
    expect((await run(bin, ["--version"], { cwd: project })).stdout).toBe(`${pkg.version as string}\n`);
    await writeFile(join(project, "bad.yaml"), "name: bad\nsteps:\n  - { id: a, to: \"nowhere\" }\n");
    const refused = await execFileAsync(bin, ["workflow", "submit", "bad.yaml", "--tenant", "acme"], { cwd: project }).then(
      () => ({ code: 0, stderr: "" }),
      (error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr ?? "" }),
    );
    // The message first: when the exit code is wrong, what the command printed says why.
    expect(refused.stderr).toMatch(/^error: INVALID_WORKFLOW: .*bad\.yaml: steps\[0\]\.to: must be role:NAME/m);
    expect(refused.code).toBe(2);

    await run(join(project, "node_modules/.bin/tsc"), ["-p", "."], { cwd: project });
    const tested = await run(process.execPath, ["--test", "out/"], { cwd: project });
    expect(tested.stdout).toMatch(/# pass 4/);
    expect(tested.stdout).toMatch(/# fail 0/);
  }, SLOW_MS);
});

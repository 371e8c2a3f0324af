#!/usr/bin/env node
/**
 * `npm run build` (and `npm ci`, through `prepare`): compiles src/ and examples/ to dist/ with
 * `tsc -p tsconfig.build.json`, copies the files the compiled code reads at run time, then bundles the CLI
 * (scripts/bundle-cli.mjs) into dist/bundle/, which is what bin/switchyard.js runs.
 *
 * dist/ mirrors the repository (dist/src, dist/examples), so every `new URL("../../…", import.meta.url)` in the
 * code points at the same relative place from dist/src/… as from src/…: dist/migrations/ for the migrator,
 * dist/examples/workflows/*.yaml for the demos. Those files are copied here rather than resolved back into the
 * checkout because an installed package ships only `files` (package.json), and dist/ is the whole of its code.
 *
 * dist/ is removed first: a source file deleted since the last build must not live on as stale JavaScript.
 * Plain JavaScript on purpose: it runs before anything is compiled and without tsx.
 */
import { spawnSync } from "node:child_process";
import { bundleCli } from "./bundle-cli.mjs";
import { cpSync, existsSync, readdirSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const dist = join(root, "dist");

/** Source trees whose non-TypeScript files (YAML, JSON, SQL, …) the compiled code may read beside itself. */
const ASSET_TREES = ["src", "examples"];
/** Copied whole. */
const DIRECTORIES = ["migrations"];

function isTypeScript(file) {
  return /\.(c|m)?ts$/.test(file);
}

function copyAssets(tree) {
  let copied = 0;
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== "node_modules") walk(path);
      } else if (entry.isFile() && !isTypeScript(entry.name)) {
        cpSync(path, join(dist, relative(root, path)));
        copied += 1;
      }
    }
  };
  walk(join(root, tree));
  return copied;
}

rmSync(dist, { recursive: true, force: true });

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const compiled = spawnSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json")], { cwd: root, stdio: "inherit" });
if (compiled.status !== 0) {
  process.stderr.write(`build: tsc -p tsconfig.build.json failed (exit ${compiled.status ?? compiled.signal})\n`);
  process.exit(compiled.status ?? 1);
}

let assets = 0;
for (const tree of ASSET_TREES) assets += copyAssets(tree);
for (const directory of DIRECTORIES) {
  cpSync(join(root, directory), join(dist, directory), { recursive: true });
  assets += readdirSync(join(root, directory)).length;
}

const entry = join(dist, "src", "cli", "main.js");
if (!existsSync(entry) || !statSync(entry).isFile()) {
  process.stderr.write(`build: ${relative(root, entry)} was not produced\n`);
  process.exit(1);
}
const bundle = await bundleCli(entry);
process.stdout.write(`build: compiled to ${relative(root, dist)}/, copied ${assets} asset files, bundled the CLI into ${bundle.chunks} files\n`);
await import("./build-console.mjs"); // the console (web/) into dist/console/

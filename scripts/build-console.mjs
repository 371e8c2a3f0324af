#!/usr/bin/env node
/**
 * Builds the console (web/, a Vite app) into dist/console/, which the gateway serves under /console/. Called at the
 * end of scripts/build.mjs, so `npm ci` (through `prepare`) and `npm run build` both produce it; also runnable on
 * its own after editing web/. Offline: everything it needs is in node_modules.
 */
import { existsSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const { build } = await import("vite");
await build({ configFile: join(root, "web", "vite.config.ts") });
const index = join(root, "dist", "console", "index.html");
if (!existsSync(index)) {
  process.stderr.write(`build-console: ${relative(root, index)} was not produced\n`);
  process.exit(1);
}
process.stdout.write(`build: console built into ${relative(root, dirname(index))}/\n`);

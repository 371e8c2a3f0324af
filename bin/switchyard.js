#!/usr/bin/env node
// The `switchyard` command: runs the compiled CLI bundle (dist/bundle/cli.js, built by `npm run build`, which
// `npm ci` runs through `prepare`; scripts/bundle-cli.mjs says why it is a bundle). Compiled JavaScript only: no
// TypeScript loader at run time, so start-up is fast and nothing is written to a temp directory. In a checkout,
// `npm run switchyard -- …` runs src/ through tsx instead.
import { fileURLToPath } from "node:url";

const entry = new URL("../dist/bundle/cli.js", import.meta.url);

let cli;
try {
  cli = await import(entry.href);
} catch (error) {
  // Only a missing entry point means "not built"; any other failure is a real error and keeps its stack.
  if (error?.code === "ERR_MODULE_NOT_FOUND" && String(error.message).includes(fileURLToPath(entry))) {
    process.stderr.write("error: CONFIG: switchyard is not built (dist/bundle/cli.js is missing): run `npm run build`\n");
    process.exit(1);
  }
  throw error;
}
await cli.main();

#!/usr/bin/env node
// The `switchyard` command: runs the TypeScript CLI (src/cli/main.ts) through tsx, so a checkout needs no build.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
await main();

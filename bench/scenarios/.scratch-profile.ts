// scratch: profile one scenario's timed phase with the inspector (not part of the bench)
import { Session } from "node:inspector/promises";
import fs from "node:fs";
import { loadConfig } from "../../src/config.js";
import { runScenarios } from "../support.js";
import { scenarios } from "../run.js";

const [name, phaseRe, out] = process.argv.slice(2);
const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.setSamplingInterval", { interval: 200 });
const config = loadConfig();
const base = scenarios.find((s) => s.name === name)!;
const scenario = { ...base, async run(ctx: any) {
  const phase = ctx.phase;
  ctx.phase = async (label: string, fn: any) => {
    if (new RegExp(phaseRe!).test(label)) { await session.post("Profiler.start");
      try { return await phase(label, fn); } finally { const { profile } = await session.post("Profiler.stop"); fs.writeFileSync(out!, JSON.stringify(profile)); } }
    return phase(label, fn);
  };
  return base.run(ctx);
} };
const results = await runScenarios([scenario], { redisUrl: config.redisUrl, databaseUrl: config.databaseUrl, quick: process.argv.includes("--quick") });
console.log(JSON.stringify(results.map(r => r.measurements.map(m => [m.name, m.value, m.extra]))));
process.exit(0);

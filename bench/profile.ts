/**
 * `npx tsx bench/profile.ts SCENARIO PHASE_REGEX OUT.cpuprofile [--quick]` — runs one bench scenario with the V8
 * sampling profiler switched on only around the phases whose name matches PHASE_REGEX (e.g. "^run 2.*drain" for
 * (b), "^run 2/" for (a)), writes the last such profile to OUT (open it in Chrome DevTools → Performance, or
 * speedscope) and prints the functions with the most self time. Only this process is profiled: the harness
 * child of (a) and (e) is not, and neither are Postgres or Redis (their CPU is in the scenario's `details`).
 */
import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import { pathToFileURL } from "node:url";
import { loadConfig } from "../src/config/index.js";
import { ErrorCode, SwitchyardError } from "../src/errors.js";
import { scenarios } from "./run.js";
import { log, runScenarios, type Scenario, type ScenarioContext } from "./support.js";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function (ms), largest first; samples of the profiler's own stop call are left out. */
export function selfTimes(profile: CpuProfile): Array<{ name: string; ms: number }> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const underInspector = (id: number): boolean => {
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) if (byId.get(at)!.callFrame.url === "node:inspector") return true;
    return false;
  };
  const totals = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    if (underInspector(id)) return;
    const frame = byId.get(id)!.callFrame;
    const where = frame.url ? ` ${frame.url.replace(/^.*\/(node_modules|main)\//, "")}:${frame.lineNumber + 1}` : "";
    const name = `${frame.functionName || "(anonymous)"}${where}`;
    totals.set(name, (totals.get(name) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return [...totals].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms);
}

async function main(argv: readonly string[]): Promise<void> {
  const [name, pattern, out] = argv.filter((a) => !a.startsWith("--"));
  const base = scenarios.find((s) => s.name === name);
  if (!base || !pattern || !out) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `usage: npx tsx bench/profile.ts SCENARIO PHASE_REGEX OUT.cpuprofile [--quick]; scenarios: ${scenarios.map((s) => s.name).join(", ")}`);
  }
  const phases = new RegExp(pattern);
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 200 });
  let last: CpuProfile | undefined;
  const profiled: Scenario = {
    ...base,
    run: (ctx: ScenarioContext) =>
      base.run({
        ...ctx,
        phase: async (label, fn) => {
          if (!phases.test(label)) return ctx.phase(label, fn);
          await session.post("Profiler.start");
          try {
            return await ctx.phase(label, fn);
          } finally {
            last = (await session.post("Profiler.stop")).profile as CpuProfile;
          }
        },
      }),
  };
  const config = loadConfig();
  const [result] = await runScenarios([profiled], { redisUrl: config.redisUrl, databaseUrl: config.databaseUrl, quick: argv.includes("--quick") });
  session.disconnect();
  if (result?.error) throw result.error;
  if (!last) throw new SwitchyardError(ErrorCode.NotFound, `no phase of ${name} matched /${pattern}/`);
  await writeFile(out, JSON.stringify(last));
  const times = selfTimes(last);
  const total = times.reduce((sum, t) => sum + t.ms, 0);
  process.stdout.write(`${out}: ${total.toFixed(0)} ms sampled\n`);
  for (const t of times.slice(0, 25)) process.stdout.write(`${t.ms.toFixed(1).padStart(9)} ms ${((t.ms / total) * 100).toFixed(1).padStart(5)}%  ${t.name}\n`);
  for (const m of result?.measurements ?? []) process.stdout.write(`${m.name} = ${m.value.toFixed(2)} ${m.unit}\n`);
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (invokedDirectly) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (error: unknown) => {
      log(`profile failed: ${(error as Error).message}`);
      process.exit(1);
    },
  );
}

/**
 * `switchyard demo` (`npm run demo`) — runs the research-report workflow end to end in this process, its foreign
 * hop included (a local A2A agent the demo starts).
 */
import type { Command } from "commander";
import { secondsOption } from "../args.js";
import type { ActionRunner } from "../action.js";
import { CommandExit } from "../context.js";
import { ExitCode } from "../output.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { startTracing } from "../../telemetry/sdk.js";

interface DemoCommandOptions {
  tenant: string;
  topic: string;
  timeout: number;
  verbose?: boolean;
  keepRunning?: boolean;
}

export function registerDemoCommand(program: Command, run: ActionRunner): void {
  /**
   * `demo [--tenant T] [--topic TEXT] [--timeout SECONDS] [--verbose]` — migrates (creating the database if
   * needed), starts the example A2A agent `fact-checker` (examples/agents/) on 127.0.0.1, a coordinator, the
   * researcher/analyst/writer/publisher workers and the gateway (127.0.0.1, a free port: it receives the agent's
   * pushes) in-process, switches on the flags the run needs (A2A egress for the tenant included) and registers the
   * agent for the tenant, submits examples/workflows/demo.yaml, starts a task, approves its parked publish step as
   * actor `demo`, prints every hop from the audit log and verifies the tenant's chain. Exit 0 only when the task
   * completed and the chain verifies; 1 otherwise (including the timeout, default 60 s). Worker logs (warnings
   * only, unless --verbose) go to stderr. Runs again against the same database (the registration is updated).
   * It ends by printing the console's URL and a fresh sign-in key for the tenant; `--keep-running` keeps the
   * gateway up until Ctrl-C so the console can be opened (without it the demo exits by itself, as CI needs).
   */
  /**
   * `demo origin` runs the origin-reply loop instead (src/devtools/demo/run-origin-demo.ts): a signed GitHub webhook →
   * task → the worker's ctx.reply → a local stand-in forge receives the comment with the tenant's token → the
   * comment's own webhook starts nothing. Exit 0 only when all of it happened and the chain verifies.
   *
   * `demo mcp` runs role → MCP tool → role (src/devtools/demo/run-mcp-demo.ts): the example MCP server
   * (examples/mcp/text-stats.ts) registered as `--protocol mcp --tool text_stats`, examples/workflows/mcp-demo.yaml.
   * Exit 0 only when the task completed, the tool was called exactly once and the chain verifies.
   *
   * `demo orchestrator` runs fan-out delegation (src/devtools/demo/run-orchestrator-demo.ts): the orchestrator
   * (examples/handlers/orchestrator.ts) asks role:analyst, role:critic and the example A2A agent at once and takes
   * their answers one turn at a time, examples/workflows/orchestrator-demo.yaml. Exit 0 only when the task
   * completed, every answer was handed over once in the order the coordinator received it, and the chain verifies.
   */
  program
    .command("demo")
    .argument("[scenario]", "workflow (default), origin (an origin reply: webhook in, comment out), mcp (role → MCP tool → role) or orchestrator (fan-out to three specialists)", "workflow")
    .description("run a governed workflow end to end in this process (start here)")
    .option("--tenant <tenant>", "tenant to run the demo as", "demo")
    .option("--topic <text>", "what the research is about", "governed agent coordination")
    .option("--timeout <seconds>", "give up when the task has not finished after this long", secondsOption, 60)
    .option("--verbose", "log the coordinator and workers at the configured level (stderr)")
    .option("--keep-running", "after the run, keep the gateway up for the console (printed URL and key) until Ctrl-C")
    .action(
      run(async (ctx, scenario: string, options: DemoCommandOptions) => {
        if (scenario !== "workflow" && scenario !== "origin" && scenario !== "mcp" && scenario !== "orchestrator") {
          throw new SwitchyardError(ErrorCode.InvalidArgument, `unknown demo ${JSON.stringify(scenario)}: choose workflow (the default), origin, mcp or orchestrator`);
        }
        const { createLogger } = await import("../../logger.js");
        const logger = createLogger({
          level: options.verbose ? ctx.config.logLevel : "warn",
          name: "switchyard-demo",
          destination: ctx.io.stderr as NodeJS.WritableStream,
        });
        const stop = ctx.shutdownSignal((signal) => ctx.note(`received ${signal}: stopping the demo`));
        // PostgreSQL and Redis: the configured ones, local servers, or embedded ones started (and stopped) here.
        const { resolveLocalServices } = await import("../../services/resolve-local-services.js");
        const services = await resolveLocalServices({ config: ctx.config, cwd: ctx.io.cwd, signal: stop.signal }).catch((error: unknown) => {
          stop.dispose();
          throw error;
        });
        const config = services.config;
        // OTEL_* on: the demo's task can be followed in Jaeger/Tempo (README, "Tracing").
        const { startTracing } = await import("../../telemetry/sdk.js");
        const tracing = await startTracing(config.telemetry, { role: "demo", logger });
        try {
          for (const line of services.lines) ctx.print(line);
          if (scenario === "mcp") {
            const { runMcpDemo } = await import("../../devtools/demo/run-mcp-demo.js");
            const mcp = await runMcpDemo({ config, print: (line) => ctx.print(line), logger, tenant: options.tenant, topic: options.topic, timeoutMs: options.timeout * 1000, signal: stop.signal });
            if (!mcp.ok) throw new CommandExit(ExitCode.Failed);
            return;
          }
          if (scenario === "orchestrator") {
            const { runOrchestratorDemo } = await import("../../devtools/demo/run-orchestrator-demo.js");
            const fanOut = await runOrchestratorDemo({ config, print: (line) => ctx.print(line), logger, tenant: options.tenant, topic: options.topic, timeoutMs: options.timeout * 1000, signal: stop.signal });
            if (!fanOut.ok) throw new CommandExit(ExitCode.Failed);
            return;
          }
          if (scenario === "origin") {
            const { runOriginDemo } = await import("../../devtools/demo/run-origin-demo.js");
            const origin = await runOriginDemo({ config, print: (line) => ctx.print(line), logger, tenant: options.tenant, timeoutMs: options.timeout * 1000, signal: stop.signal });
            if (!origin.ok) throw new CommandExit(ExitCode.Failed);
            return;
          }
          const { runDemo } = await import("../../devtools/demo/run-demo.js");
          const result = await runDemo({
            config,
            print: (line) => ctx.print(line),
            logger,
            tenant: options.tenant,
            topic: options.topic,
            timeoutMs: options.timeout * 1000,
            signal: stop.signal,
            keepRunning: options.keepRunning ?? false,
          });
          if (!result.ok) throw new CommandExit(ExitCode.Failed);
        } finally {
          await tracing.shutdown();
          await services.stop();
          stop.dispose();
        }
      }),
    );
}

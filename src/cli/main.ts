/**
 * `switchyard` — the command line: run the processes, migrate, run the demo, and every tenant / SRE action.
 *
 * `buildProgram(io)` assembles the commands (one file per group under commands/); `runCli(argv, io)` parses and
 * runs one invocation and returns its exit code without exiting, so tests run it in-process; executed directly
 * (`tsx src/cli/main.ts …`, `npm run switchyard -- …`, bin/switchyard.js) it sets `process.exitCode` and lets the
 * process end by itself once every connection is closed.
 *
 * Registering the commands is cheap on purpose: a commands/ file imports only commander and the small helpers
 * (args, output, context, remote/session); whatever an action needs (pg, ioredis, the runtime, Connect, the A2A
 * SDK) it imports when it runs. So `--help`, `--version` and a usage error load none of it; `bin/switchyard.js`
 * runs the compiled form of this file (dist/src/cli/main.js). test/cli/compiled.test.ts holds both to that.
 */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Command, CommanderError } from "commander";
import { createActionRunner } from "./action.js";
import { CommandExit, defaultIo, type CliIo } from "./context.js";
import { registerApiKeyCommands } from "./commands/apikey.js";
import { registerApprovalCommands } from "./commands/approval.js";
import { registerAuditCommands } from "./commands/audit.js";
import { registerBusCommands } from "./commands/bus.js";
import { registerConnectionCommands } from "./commands/connection.js";
import { registerDemoCommand } from "./commands/demo.js";
import { registerDlqCommands } from "./commands/dlq.js";
import { registerFlagsCommands } from "./commands/flags.js";
import { registerShardsCommands } from "./commands/shards.js";
import { registerForeignCommands } from "./commands/foreign.js";
import { registerGatewayCommand } from "./commands/gateway.js";
import { registerIngestCommands } from "./commands/ingest.js";
import { registerMigrateCommand } from "./commands/migrate.js";
import { registerPolicyCommands } from "./commands/policy.js";
import { registerStartCommands } from "./commands/start.js";
import { registerTaskCommands } from "./commands/task.js";
import { registerTenantCommands } from "./commands/tenant.js";
import { registerVaultCommands } from "./commands/vault.js";
import { registerWorkflowCommands } from "./commands/workflow.js";
import { packageVersion } from "./version.js";
import { ExitCode, exitCodeFor, formatErrorJson, formatErrorLine, toCliError } from "./output.js";
import { ErrorCode, SwitchyardError } from "../errors.js";

const HELP_FOOTER = `
Configuration comes from the environment (DATABASE_URL, REDIS_URL, SWITCHYARD_*); the global flags override it.
Exit codes: 0 ok, 1 the operation failed (task failed, chain broken, not found), 2 usage or validation error,
130 interrupted. Errors print "error: CODE: message" on stderr, or {"error":{...}} on stdout with --json.`;

export function buildProgram(io: CliIo = defaultIo()): Command {
  const program = new Command("switchyard")
    .description("a governed coordinator for agent work")
    .option("--database-url <url>", "PostgreSQL URL (overrides DATABASE_URL)")
    .option("--redis-url <url>", "Redis URL (overrides REDIS_URL)")
    .option("--key-prefix <prefix>", "Redis key prefix (overrides SWITCHYARD_KEY_PREFIX)")
    .option("--log-level <level>", "log level of the long-running processes (overrides SWITCHYARD_LOG_LEVEL)")
    .option("--url <url>", "send tenant commands to this gateway instead of the database (overrides SWITCHYARD_URL)")
    .option("--token <key>", "API key for --url (overrides SWITCHYARD_TOKEN)")
    .version(packageVersion(), "-V, --version", "print the version of switchyard")
    // Subcommands inherit these two settings, so they must be set before any command is added.
    .exitOverride()
    .configureOutput({
      writeOut: (text) => void io.stdout.write(text),
      writeErr: (text) => void io.stderr.write(text),
      // Usage errors are printed by runCli in the CLI's own `error: CODE: message` form.
      outputError: () => {},
    })
    .showSuggestionAfterError()
    .addHelpText("after", HELP_FOOTER);
  const run = createActionRunner(io);
  registerDemoCommand(program, run);
  registerMigrateCommand(program, run);
  registerStartCommands(program, run);
  registerGatewayCommand(program, run);
  registerWorkflowCommands(program, run);
  registerPolicyCommands(program, run);
  registerTaskCommands(program, run);
  registerApprovalCommands(program, run);
  registerAuditCommands(program, run);
  registerDlqCommands(program, run);
  registerBusCommands(program, run);
  registerFlagsCommands(program, run);
  registerShardsCommands(program, run);
  registerTenantCommands(program, run);
  registerApiKeyCommands(program, run);
  registerForeignCommands(program, run);
  registerConnectionCommands(program, run);
  registerVaultCommands(program, run);
  registerIngestCommands(program, run);
  return program;
}

/** Runs one invocation (`argv` without node and script) and returns its exit code. Never throws. */
export async function runCli(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  const fullIo = defaultIo(io);
  try {
    await buildProgram(fullIo).parseAsync([...argv], { from: "user" });
    return ExitCode.Ok;
  } catch (error) {
    return report(fullIo, error, argv.includes("--json"));
  }
}

function report(io: CliIo, error: unknown, json: boolean): number {
  if (error instanceof CommandExit) return error.exitCode;
  let failure: SwitchyardError;
  if (error instanceof CommanderError) {
    if (error.code === "commander.helpDisplayed" || error.code === "commander.version") return ExitCode.Ok;
    // Help shown because a command group was run without a subcommand: the help is the message.
    if (error.code === "commander.help") return ExitCode.Usage;
    failure = new SwitchyardError(ErrorCode.InvalidArgument, error.message.replace(/^error: /, ""), { details: { reason: error.code } });
  } else {
    failure = toCliError(error);
  }
  if (json) io.stdout.write(`${formatErrorJson(failure)}\n`);
  else io.stderr.write(`${formatErrorLine(failure)}\n`);
  return error instanceof CommanderError ? ExitCode.Usage : exitCodeFor(failure);
}

/** The process entry point: runs `process.argv` and leaves the exit code for Node to use when it ends. */
export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  quietOnClosedPipe(process.stdout);
  process.exitCode = await runCli(argv);
}

/**
 * `switchyard … | head` closes the pipe while the CLI still writes: stop there, as Unix tools do, rather than die
 * with an unhandled EPIPE stack trace.
 */
function quietOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
    process.exit(process.exitCode ?? 0);
  });
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) await main();

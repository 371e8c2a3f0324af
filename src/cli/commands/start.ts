/**
 * `switchyard start coordinator|harness|all` — the long-running processes. Each logs JSON lines to stdout and
 * stops gracefully on SIGINT/SIGTERM; a second signal exits at once with 130.
 */
import type { Command } from "commander";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { intOption } from "../args.js";
import type { ActionRunner } from "../action.js";
import { openRuntime, type CliContext } from "../context.js";
import { EXAMPLE_ROLES } from "../../devtools/example-handlers.js";
import type { MetricsServer } from "../../metrics/metrics-server.js";
import type { Config } from "../../config/index.js";
import type { Logger } from "../../logger.js";

/** How long each /readyz check of a standalone coordinator may take. */
const READINESS_TIMEOUT_MS = 2_000;

export function registerStartCommands(program: Command, run: ActionRunner): void {
  const start = program.command("start").description("run a coordinator, a worker harness, or everything for development");

  /**
   * `start coordinator [--consumer NAME]` — consumes the coordinator stream, sweeps timeouts and retries, relays
   * the outbox. Several may run at once against the same Redis and Postgres. Runs until a signal.
   */
  start
    .command("coordinator")
    .description("run a coordinator until SIGINT/SIGTERM")
    .option("--consumer <name>", "consumer name in the coordinator group (default: host-pid-random)")
    .action(
      run(async (ctx, options: { consumer?: string }) => {
        const { withTracing } = await import("../../telemetry/sdk.js");
        const logger = ctx.createLogger("switchyard-coordinator");
        await withTracing(ctx.config.telemetry, { role: "coordinator", logger }, () => runCoordinator(ctx, options, logger));
      }),
    );

  /**
   * `start harness (--role NAME | --team NAME) --handler PATH [--concurrency N]` — serves one queue with the
   * handler module's default export. Runs until a signal (in-flight turns get SWITCHYARD_SHUTDOWN_GRACE_MS).
   */
  start
    .command("harness")
    .description("run a worker harness for one role or team until SIGINT/SIGTERM")
    .option("--role <name>", "serve role:NAME")
    .option("--team <name>", "serve team:NAME")
    .requiredOption("--handler <path>", "module whose default export is the handler")
    .option("--concurrency <n>", "handlers running at once", intOption(1), 10)
    .action(
      run(async (ctx, options: { role?: string; team?: string; handler: string; concurrency: number }) => {
        const [{ runHarnessProcess }, { withTracing }] = await Promise.all([import("../../harness/process.js"), import("../../telemetry/sdk.js")]);
        if ((options.role === undefined) === (options.team === undefined)) {
          throw new SwitchyardError(ErrorCode.InvalidArgument, "pass exactly one of --role or --team", { details: { path: "--role" } });
        }
        const logger = ctx.createLogger("switchyard-harness");
        await withTracing(ctx.config.telemetry, { role: "harness", logger }, () => runHarnessProcess({
          config: ctx.config,
          ...(options.role !== undefined ? { role: options.role } : { team: options.team! }),
          handlerPath: options.handler,
          concurrency: options.concurrency,
          logger,
          cwd: ctx.io.cwd,
          ...(ctx.io.signal ? { signal: ctx.io.signal } : {}),
          liveFlags: true,
          processGuards: ctx.io.handleSignals,
        }));
        // A handler that ignores its abort signal would keep the process alive past the grace period; its entry is
        // left unacknowledged (another worker reclaims it), so once shutdown is done the process may simply go.
        if (!ctx.io.signal) setTimeout(() => process.exit(process.exitCode ?? 0), 1_000).unref();
      }),
    );

  /**
   * `start all [--roles a,b,…]` — for development: a coordinator and harnesses for the example roles
   * (researcher, analyst, writer, publisher, echo from examples/handlers/) in one process. Runs until a signal.
   */
  start
    .command("all")
    .description("run a coordinator and the example workers in one process (development)")
    .option("--roles <list>", "comma-separated example roles to serve", EXAMPLE_ROLES.join(","))
    .option("--consumer <name>", "the coordinator's consumer name")
    .option("--port <n>", "the API gateway's port (0: any free port; default SWITCHYARD_GATEWAY_PORT or 8080)", intOption(0))
    .option("--host <host>", "the API gateway's interface (default SWITCHYARD_GATEWAY_HOST or 127.0.0.1)")
    .option("--no-gateway", "do not serve the API gateway")
    // OTEL_* on: spans of every process in it are exported, and flushed once it stopped (README, "Tracing").
    .action(
      run(async (ctx, options: AllOptions) => {
        const { withTracing } = await import("../../telemetry/sdk.js");
        await withTracing(ctx.config.telemetry, { role: "all", logger: ctx.createLogger("switchyard") }, () => runAll(ctx, options));
      }),
    );
}

interface AllOptions {
  roles: string;
  consumer?: string;
  port?: number;
  host?: string;
  gateway: boolean;
}

async function runAll(ctx: CliContext, options: AllOptions): Promise<void> {
  const roles = options.roles.split(",").map((r) => r.trim()).filter(Boolean);
  const unknown = roles.filter((r) => !(EXAMPLE_ROLES as readonly string[]).includes(r));
  if (roles.length === 0 || unknown.length > 0) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `--roles must list example roles (${EXAMPLE_ROLES.join(", ")}); unknown: ${unknown.join(", ") || "(none given)"}`, {
      details: { path: "--roles" },
    });
  }
  const logger = ctx.createLogger("switchyard");
  // PostgreSQL and Redis: the configured ones, local servers, or embedded ones started here and stopped last. An
  // explicit URL that does not answer yet is waited for, like every long-running process does.
  const { resolveLocalServices } = await import("../../services/resolve-local-services.js");
  const services = await resolveLocalServices({ config: ctx.config, cwd: ctx.io.cwd, unreachable: "wait", ...(ctx.io.signal ? { signal: ctx.io.signal } : {}) });
  for (const service of [services.postgres, services.redis]) logger.info({ service: service.service, embedded: service.embedded }, `${service.service}: ${service.description}`);
  try {
    // The embedded database is Switchyard's own: bring it to the current schema, as the demo does (any other
    // database is migrated by its operator with `switchyard migrate`).
    if (services.postgres.embedded) {
      const { migrate } = await import("../../store/migrate.js");
      const migrated = await migrate({ connectionString: services.config.databaseUrl, createDatabase: true });
      logger.info({ applied: migrated.applied, version: migrated.version }, "embedded database migrated");
    }
    await runAllOn(ctx, options, roles, logger, services.config);
  } finally {
    await services.stop();
  }
}

async function runAllOn(ctx: CliContext, options: AllOptions, roles: string[], logger: Logger, config: Config): Promise<void> {
  const [{ startDevStack }, { installProcessGuards }] = await Promise.all([import("../../devtools/dev-stack.js"), import("../../process/process-guard.js")]);
  const stack = await startDevStack({
    config,
    logger,
    roles,
    waitForDependencies: true,
    ...(options.consumer ? { consumer: options.consumer } : {}),
    // The same address and limits as `start gateway`: flags first, then SWITCHYARD_GATEWAY_*, then the defaults.
    ...(options.gateway
      ? {
          gateway: {
            port: options.port ?? config.gateway.port,
            host: options.host ?? config.gateway.host,
            readMaxBytes: config.gateway.maxBodyBytes,
            watchMaxPerTenant: config.gateway.watchMaxPerTenant,
            watchMaxStreams: config.gateway.watchMaxStreams,
            shutdownGraceMs: config.harness.shutdownGraceMs,
          },
        }
      : {}),
  });
  const stop = ctx.shutdownSignal((signal) => logger.info({ signal }, "stopping gracefully; send the signal again to exit at once"));
  const removeGuards = ctx.io.handleSignals ? installProcessGuards({ logger, health: stack.runtime.health }) : () => {};
  try {
    logger.info({ roles }, "coordinator and example harnesses started");
    const stopped = new Promise<void>((resolve) => {
      if (stop.signal.aborted) resolve();
      stop.signal.addEventListener("abort", () => resolve(), { once: true });
    });
    await Promise.race([stopped, stack.done]);
  } finally {
    await stack.stop();
    stop.dispose();
    removeGuards();
    logger.info("stopped");
  }
}

async function runCoordinator(ctx: CliContext, options: { consumer?: string }, logger: ReturnType<CliContext["createLogger"]>): Promise<void> {
  const [{ createCoordinator }, { consumerName }, { startMetricsServer }, { readiness }, { installProcessGuards }] = await Promise.all([
    import("../../coordinator-process.js"),
    import("../../bus/keys.js"),
    import("../../metrics/metrics-server.js"),
    import("../../process/readiness.js"),
    import("../../process/process-guard.js"),
  ]);
  const { config } = ctx;
  const consumer = options.consumer ?? consumerName("coordinator");
  // Named after the consumer, so an operator (or the fencing test) can tell the coordinators' sessions apart.
  const runtime = await openRuntime(config, { logger, waitForDependencies: true, applicationName: `switchyard-coordinator ${consumer}`.slice(0, 63) });
  const stop = ctx.shutdownSignal((signal) => logger.info({ signal }, "stopping gracefully; send the signal again to exit at once"));
  const removeGuards = ctx.io.handleSignals ? installProcessGuards({ logger, health: runtime.health }) : () => {};
  let metricsServer: MetricsServer | undefined;
  try {
    if (config.metrics.port !== null) {
      metricsServer = await startMetricsServer({
        registry: runtime.metrics.registry,
        host: config.metrics.host,
        port: config.metrics.port,
        logger,
        readiness: () => readiness({ pool: runtime.pool, redis: runtime.redis, health: runtime.health, timeoutMs: READINESS_TIMEOUT_MS }),
      });
      logger.info({ url: `${metricsServer.url}/metrics` }, "serving metrics and readiness");
    }
    const coordinator = createCoordinator(runtime, { consumer, logger });
    logger.info("coordinator started");
    await coordinator.start(stop.signal);
    logger.info("coordinator stopped");
  } finally {
    await metricsServer?.close();
    // Handlers stay until everything is closed: a second signal while closing still means "exit now".
    await runtime.close();
    stop.dispose();
    removeGuards();
  }
}

/**
 * `switchyard start gateway` — the HTTP server for the tenant/SRE API, metrics and health. Runs until a signal.
 */
import type { Command } from "commander";
import { intOption } from "../args.js";
import type { ActionRunner } from "../action.js";
import { openRuntime, type CliContext } from "../context.js";

export interface GatewayCommandOptions {
  port?: number;
  host?: string;
  readMaxBytes?: number;
}

/** Adds `gateway` under the `start` command group (registered by start.ts). */
export function registerGatewayCommand(program: Command, run: ActionRunner): void {
  const start = program.commands.find((c) => c.name() === "start") ?? program.command("start");

  /**
   * `start gateway [--port N] [--host H] [--read-max-bytes N]` — serves the Connect API (`/switchyard.api.v1.*`,
   * JSON and binary), `/metrics`, `/healthz`, `/readyz` and `/approvals/decide`. Stops gracefully on
   * SIGINT/SIGTERM: no new connections, in-flight calls finish (SWITCHYARD_SHUTDOWN_GRACE_MS), then it exits.
   */
  start
    .command("gateway")
    .description("run the API gateway (Connect API, /metrics, /healthz, /readyz) until SIGINT/SIGTERM")
    .option("--port <n>", "TCP port (0: any free port; default SWITCHYARD_GATEWAY_PORT or 8080)", intOption(0))
    .option("--host <host>", "interface to listen on (default SWITCHYARD_GATEWAY_HOST or 127.0.0.1)")
    .option("--read-max-bytes <n>", "largest request body accepted (default SWITCHYARD_GATEWAY_MAX_BODY_BYTES)", intOption(1))
    .action(run(async (ctx, options: GatewayCommandOptions) => runGateway(ctx, options)));
}

async function runGateway(ctx: CliContext, options: GatewayCommandOptions): Promise<void> {
  const logger = ctx.createLogger("switchyard-gateway");
  const { withTracing } = await import("../../telemetry/sdk.js");
  await withTracing(ctx.config.telemetry, { role: "gateway", logger }, () => serveGateway(ctx, options, logger));
}

async function serveGateway(ctx: CliContext, options: GatewayCommandOptions, logger: ReturnType<CliContext["createLogger"]>): Promise<void> {
  const [{ startGateway }, { installProcessGuards }, { GATEWAY_SENDER }] = await Promise.all([
    import("../../gateway/server.js"),
    import("../../process/process-guard.js"),
    import("../../bus/auth/bus-keys.js"),
  ]);
  const runtime = await openRuntime(ctx.config, { logger, waitForDependencies: true });
  try {
    // The callback route publishes FOREIGN results as the gateway: without that key they would all be refused.
    runtime.busAuth.publisherKey(GATEWAY_SENDER);
  } catch (error) {
    await runtime.close();
    throw error;
  }
  const stop = ctx.shutdownSignal((signal) => logger.info({ signal }, "stopping gracefully; send the signal again to exit at once"));
  const removeGuards = ctx.io.handleSignals ? installProcessGuards({ logger, health: runtime.health }) : () => {};
  try {
    const gateway = await startGateway(runtime, {
      port: options.port ?? ctx.config.gateway.port,
      host: options.host ?? ctx.config.gateway.host,
      readMaxBytes: options.readMaxBytes ?? ctx.config.gateway.maxBodyBytes,
      watchMaxPerTenant: ctx.config.gateway.watchMaxPerTenant,
      watchMaxStreams: ctx.config.gateway.watchMaxStreams,
      shutdownGraceMs: ctx.config.harness.shutdownGraceMs,
    });
    await new Promise<void>((resolve) => {
      if (stop.signal.aborted) resolve();
      stop.signal.addEventListener("abort", () => resolve(), { once: true });
    });
    await gateway.close();
  } finally {
    await runtime.close();
    stop.dispose();
    removeGuards();
  }
}

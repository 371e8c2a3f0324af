/**
 * The Switchyard processes, run as the deploy ships them (deploy/compose.yaml): `switchyard start coordinator`
 * ×N, `switchyard start harness --role R` ×2 per role, one `switchyard start gateway` — each a real child
 * process. `launchSpec` is the ONE place that says how a process is launched (arguments and environment), so a
 * new requirement (a per-role bus key, say) is one edit.
 *
 * A process the suite did not kill that exits anyway is recorded as an unexpected exit (with its last output)
 * and started again after a second, as compose's `restart: unless-stopped` would: the run goes on and the report
 * says what died.
 */
import { kill, spawnCli, type ManagedProcess } from "../test/support/processes.js";
import { FLAGS_ON_ENV } from "../test/support/env.js";
import { TEST_BUS_SECRET_ENV, testBusAuth } from "../test/support/bus-auth.js";
import { formatPublisherKey } from "../src/bus/auth/bus-keys.js";
import { sleep } from "./random.js";
import { writeRunState } from "./services.js";

export type ProcessKind = "coordinator" | "harness" | "gateway";

export interface FleetOptions {
  coordinators: number;
  harnessesPerRole: number;
  roles: readonly string[];
  handlerPath: string;
  /** Handlers running at once per harness. */
  concurrency: number;
  redisUrl: string;
  databaseUrl: string;
  gatewayPort: number;
  runDir: string;
  /** Exit times are reported relative to it. */
  runStartedAt: number;
  /** Once aborted, exits are neither counted nor followed by a restart: the suite is ending. */
  signal: AbortSignal;
  log: (line: string) => void;
}

export interface UnexpectedExit {
  name: string;
  code: number | null;
  signal: string | null;
  atMs: number;
  /** The error it died of (see `diedOf`). */
  error: string;
  /** The process's last output lines. */
  tail: string;
}

interface Member {
  name: string;
  kind: ProcessKind;
  role?: string;
  proc: ManagedProcess;
  /** The suite is ending it (a kill -9 fault or the final stop): its exit is expected. */
  killing: boolean;
}

/** Timings shortened from the production defaults so a lost message is recovered within seconds, not minutes. */
export const TIMING_ENV: Readonly<Record<string, string>> = {
  SWITCHYARD_RECLAIM_IDLE_MS: "3000",
  SWITCHYARD_HEARTBEAT_MS: "1000",
  SWITCHYARD_SWEEP_INTERVAL_MS: "500",
  SWITCHYARD_OUTBOX_STALE_MS: "1000",
  SWITCHYARD_BLOCK_MS: "500",
  SWITCHYARD_SHUTDOWN_GRACE_MS: "2000",
  SWITCHYARD_STEP_TIMEOUT_MS: "10000",
};

export class Fleet {
  private readonly members = new Map<string, Member>();
  private stopping = false;
  readonly unexpectedExits: UnexpectedExit[] = [];

  constructor(private readonly options: FleetOptions) {}

  get gatewayUrl(): string {
    return `http://127.0.0.1:${this.options.gatewayPort}`;
  }

  /** How a process of each kind is launched: the deploy's command line and environment. */
  private launchSpec(kind: ProcessKind, role?: string): { args: string[]; env: Record<string, string> } {
    const o = this.options;
    const env: Record<string, string> = {
      ...FLAGS_ON_ENV,
      ...TIMING_ENV,
      REDIS_URL: o.redisUrl,
      DATABASE_URL: o.databaseUrl,
      SWITCHYARD_KEY_PREFIX: "sy:",
      SWITCHYARD_LOG_LEVEL: "warn",
      SWITCHYARD_A2A_EGRESS_ENABLED: "false",
    };
    // Bus authentication as deployed: the master secret for coordinators only, every other process its own key.
    const keyOf = (sender: string) => formatPublisherKey(testBusAuth().publisherKey(sender));
    switch (kind) {
      case "coordinator":
        return { args: ["start", "coordinator"], env: { ...env, SWITCHYARD_BUS_SECRET: TEST_BUS_SECRET_ENV } };
      case "harness":
        return {
          args: ["start", "harness", "--role", role!, "--handler", o.handlerPath, "--concurrency", String(o.concurrency)],
          env: { ...env, SWITCHYARD_BUS_KEY: keyOf(`role:${role!}`) },
        };
      case "gateway":
        return {
          args: ["start", "gateway"],
          env: { ...env, SWITCHYARD_BUS_KEY: keyOf("gateway"), SWITCHYARD_GATEWAY_HOST: "127.0.0.1", SWITCHYARD_GATEWAY_PORT: String(o.gatewayPort), SWITCHYARD_PUBLIC_URL: this.gatewayUrl },
        };
    }
  }

  /** Starts every process and waits until the gateway reports ready. */
  async start(): Promise<void> {
    const o = this.options;
    for (let i = 1; i <= o.coordinators; i++) this.spawn(`coordinator-${i}`, "coordinator");
    for (const role of o.roles) for (let i = 1; i <= o.harnessesPerRole; i++) this.spawn(`harness-${role}-${i}`, "harness", role);
    this.spawn("gateway", "gateway");
    await this.waitForGateway(90_000);
  }

  names(kind: ProcessKind): string[] {
    return [...this.members.values()].filter((m) => m.kind === kind).map((m) => m.name);
  }

  /** kill -9 of one process, then the same process started again; resolves once it is spawned. */
  async killAndRestart(name: string): Promise<{ pid: number }> {
    const member = this.members.get(name);
    if (!member) throw new Error(`no process named ${name}`);
    const pid = member.proc.child.pid!;
    member.killing = true;
    await kill(member.proc, "SIGKILL");
    this.spawn(name, member.kind, member.role);
    return { pid };
  }

  async waitForGateway(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ready = await fetch(`${this.gatewayUrl}/readyz`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false);
      if (ready) return;
      if (Date.now() > deadline) throw new Error(`the gateway was not ready within ${timeoutMs} ms:\n${this.members.get("gateway")?.proc.output().split("\n").slice(-20).join("\n")}`);
      await sleep(250);
    }
  }

  /** Ends every process: SIGTERM, then SIGKILL for what is still running after 10 s. */
  async stop(): Promise<void> {
    this.stopping = true;
    const members = [...this.members.values()];
    for (const m of members) m.killing = true;
    await Promise.all(
      members.map(async (m) => {
        if (m.proc.child.exitCode !== null || m.proc.child.signalCode !== null) return;
        m.proc.child.kill("SIGTERM");
        const done = await Promise.race([m.proc.exited.then(() => true), sleep(10_000).then(() => false)]);
        if (!done) await kill(m.proc, "SIGKILL");
      }),
    );
  }

  private spawn(name: string, kind: ProcessKind, role?: string): void {
    const { args, env } = this.launchSpec(kind, role);
    const proc = spawnCli(name, args, env, { detached: true });
    const member: Member = { name, kind, ...(role ? { role } : {}), proc, killing: false };
    this.members.set(name, member);
    writeRunState(this.options.runDir, { children: [...this.members.values()].map((m) => m.proc.child.pid!).filter(Boolean) });
    void proc.exited.then(async ({ code, signal }) => {
      if (member.killing || this.stopping || this.options.signal.aborted) return;
      const tail = proc.output().split("\n").slice(-40);
      const error = diedOf(tail);
      this.unexpectedExits.push({ name, code, signal, atMs: Date.now() - this.options.runStartedAt, error: error.trim().slice(0, 300), tail: tail.join("\n") });
      this.options.log(`UNEXPECTED EXIT: ${name} (pid ${proc.child.pid}) exited on its own with ${signal ?? `code ${code}`}; starting it again`);
      await sleep(1_000);
      if (!this.stopping && !this.options.signal.aborted && this.members.get(name) === member) this.spawn(name, kind, role);
    });
  }
}

/**
 * The error a process died of, from its last output: the last line that starts like a thrown error or the CLI's
 * `error: CODE: …` (logged JSON errors it survived are skipped), marked when Node reported it unhandled.
 */
export function diedOf(tail: readonly string[]): string {
  const line = [...tail].reverse().find((l) => /^(\w*Error\b|error:)/.test(l.trim())) ?? tail.at(-1) ?? "";
  const unhandled = tail.some((l) => l.includes("Unhandled 'error' event"));
  return `${unhandled ? "Unhandled 'error' event: " : ""}${line.trim()}`.slice(0, 300);
}

/**
 * A part of the system under test in its own forked process (a harness, a coordinator), so that on a multi-core box
 * it does not share the bench's one Node thread. Parent and child talk over the IPC channel only:
 *   parent → child: { type: "sample" } (answered with { type: "sample", cpuMs, ...what the child adds }), { type: "stop" }
 *   child → parent: { type: "ready" } once working, { type: "stopped", cpuMs, ...result } after a graceful stop.
 * Everything the child needs arrives as one JSON argument, so it reads no environment.
 */
import { fork } from "node:child_process";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";

type Message = { type: string; cpuMs?: number; [key: string]: unknown };

export interface ForkedChild<Sample extends object, Stopped extends object> {
  pid: number;
  /** The child's CPU so far (ms, all threads) and whatever else it samples. */
  sample(): Promise<Sample & { cpuMs: number }>;
  /** Stops the child gracefully; resolves with its CPU and its result once it has exited. */
  stop(): Promise<Stopped & { cpuMs: number }>;
}

/** Forks `moduleUrl` (a module that calls `runAsChild`) with `options`; resolves once it is ready. */
export async function forkChild<Sample extends object, Stopped extends object>(moduleUrl: string, options: unknown, extraExecArgv: readonly string[] = []): Promise<ForkedChild<Sample, Stopped>> {
  // The parent runs under tsx; its execArgv carries the loader, so the child can run a .ts file too.
  const child = fork(new URL(moduleUrl).pathname, [JSON.stringify(options)], { execArgv: [...process.execArgv, ...extraExecArgv], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const messages: Message[] = [];
  const waiters: Array<() => void> = [];
  child.on("message", (message: Message) => {
    messages.push(message);
    for (const wake of waiters.splice(0)) wake();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const next = async (type: string): Promise<Message> => {
    for (;;) {
      const index = messages.findIndex((m) => m.type === type);
      if (index >= 0) return messages.splice(index, 1)[0]!;
      const code = await Promise.race([exited, new Promise<"message">((resolve) => waiters.push(() => resolve("message")))]);
      if (code !== "message") throw new SwitchyardError(ErrorCode.Internal, `child process ${moduleUrl} exited (${code}) before "${type}"`);
    }
  };
  await next("ready");
  return {
    pid: child.pid!,
    async sample() {
      child.send({ type: "sample" });
      const { type: _type, ...sample } = await next("sample");
      return sample as Sample & { cpuMs: number };
    },
    async stop() {
      child.send({ type: "stop" });
      const { type: _type, ...stopped } = await next("stopped");
      await exited;
      return stopped as Stopped & { cpuMs: number };
    },
  };
}

/** This process's CPU so far (ms, user + system, all threads). */
function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

export interface ChildWork<Options, Sample extends object, Stopped extends object> {
  /** Starts the work; resolves once it is working (then "ready" is sent). */
  start(options: Options): Promise<{ sample?: () => Promise<Sample>; stop: () => Promise<Stopped> }>;
}

/**
 * The child side: when this process was forked by `forkChild` for `moduleUrl`, runs `work` and serves the parent
 * until it asks to stop. Importing the module anywhere else starts nothing.
 */
export function runAsChild<Options, Sample extends object, Stopped extends object>(moduleUrl: string, name: string, work: ChildWork<Options, Sample, Stopped>): void {
  if (!process.send || !process.argv[2]?.startsWith("{") || process.argv[1] !== new URL(moduleUrl).pathname) return;
  const serve = async (): Promise<void> => {
    const running = await work.start(JSON.parse(process.argv[2]!) as Options);
    process.send!({ type: "ready" });
    await new Promise<void>((resolve) =>
      process.on("message", (m: { type?: string }) => {
        if (m.type === "sample") void (running.sample?.() ?? Promise.resolve({})).then((extra) => process.send!({ type: "sample", cpuMs: cpuMs(), ...extra }));
        if (m.type === "stop") resolve();
      }),
    );
    const result = await running.stop();
    process.send!({ type: "stopped", cpuMs: cpuMs(), ...result }, () => process.exit(0));
  };
  serve().catch((error: unknown) => {
    process.stderr.write(`${name} process failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  });
}

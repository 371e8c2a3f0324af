/**
 * The demo's in-process stack: the coordinator and workers of `startDevStack`, plus the gateway on 127.0.0.1, so
 * that the foreign agent's pushes reach the A2A callback route.
 *
 * The callback URL in every push config is built from `config.gateway.publicUrl`, which the runtime reads once when
 * it is created — so the gateway's port must be known BEFORE the runtime exists. The demo asks the kernel for a free
 * loopback port (bind to port 0, read it, close), builds the config with it, then starts the gateway on it. Another
 * process could take the port in between; that is vanishingly rare on a developer machine, and the demo then simply
 * tries again with a new port (a few times) instead of adding a way to re-point a running runtime.
 */
import { createServer, type AddressInfo } from "node:net";
import type { Config } from "../../config/index.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { startGateway, type Gateway } from "../../gateway/server.js";
import type { Logger } from "../../logger.js";
import { startDevStack, type DevStack } from "../dev-stack.js";
import { demoForeignConfig } from "./demo-foreign.js";

export interface DemoStackOptions {
  config: Config;
  logger: Logger;
  roles: readonly string[];
  /** Tries when the picked port was taken before the gateway bound it. @defaultValue 3 */
  attempts?: number;
}

export interface DemoStack extends DevStack {
  gateway: Gateway;
  /** The config the runtime was built from (public URL = the gateway's URL, loopback egress admitted). */
  config: Config;
}

export async function startDemoStack(options: DemoStackOptions): Promise<DemoStack> {
  const attempts = options.attempts ?? 3;
  for (let attempt = 1; ; attempt++) {
    const port = await freeLoopbackPort();
    const config = demoForeignConfig(options.config, `http://127.0.0.1:${port}`);
    const stack = await startDevStack({ config, logger: options.logger, roles: options.roles });
    let gateway: Gateway;
    try {
      // Loopback only: the demo's API needs no outside callers, and its agent is on this host.
      gateway = await startGateway(stack.runtime, { port, host: "127.0.0.1", collectMetrics: false, shutdownGraceMs: 2_000 });
    } catch (error) {
      await stack.stop();
      const taken = error instanceof SwitchyardError && error.details.cause === "EADDRINUSE";
      if (taken && attempt < attempts) continue;
      if (taken) throw new SwitchyardError(ErrorCode.Unavailable, `could not start the demo's gateway: ${attempts} free ports were taken before it could bind them`, { cause: error });
      throw error;
    }
    const stopStack = stack.stop;
    let stopping: Promise<void> | undefined;
    // The gateway first: it serves on the runtime that the stack closes.
    const stop = (): Promise<void> => (stopping ??= gateway.close().finally(() => stopStack()));
    return { ...stack, gateway, config, stop };
  }
}

/** A port the kernel says is free on 127.0.0.1 right now (see the module comment for the race). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

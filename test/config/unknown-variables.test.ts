/** A misspelt SWITCHYARD_* variable is named (with the likely intended one) instead of silently ignored. */
import { describe, expect, it } from "vitest";
import { CliContext, defaultIo } from "../../src/cli/context.js";
import { loadConfig, unknownVariables } from "../../src/config/index.js";

describe("unknown SWITCHYARD_* variables", () => {
  it("are listed with the closest known name; tenant secrets and other variables are not ours to judge", () => {
    const env = { SWITCHYARD_LOG_LEVL: "debug", SWITCHYARD_FROBNICATE: "1", SWITCHYARD_SECRET_ACME__TOKEN: "t", SWITCHYARD_LOG_LEVEL: "warn", PATH: "/bin", switchyard_x: "y" };
    expect(unknownVariables(env)).toEqual([
      { name: "SWITCHYARD_FROBNICATE", suggestion: undefined },
      { name: "SWITCHYARD_LOG_LEVL", suggestion: "SWITCHYARD_LOG_LEVEL" },
    ]);
    // Warned about, never refused: the configuration still loads.
    expect(loadConfig(env).logLevel).toBe("warn");
  });

  it("are warned about on the CLI's stderr once the configuration is read", async () => {
    const stderr: string[] = [];
    const io = defaultIo({ env: { SWITCHYARD_HEARTBEAT: "500" }, stdout: { write: () => true }, stderr: { write: (text: string) => stderr.push(text) } });
    const context = new CliContext(io, {}, { config: await import("../../src/config/index.js"), logger: await import("../../src/logger.js"), endpoints: await import("../../src/process/service-endpoints.js") });
    expect(context.config.harness.heartbeatMs).toBe(10_000);
    expect(stderr).toEqual(["warning: SWITCHYARD_HEARTBEAT is not a Switchyard setting and is ignored (did you mean SWITCHYARD_HEARTBEAT_MS?)\n"]);
    void context.config;
    expect(stderr).toHaveLength(1);
  });
});

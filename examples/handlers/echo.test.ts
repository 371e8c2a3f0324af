/** The example handlers' own tests use the public testing kit, as a worker author's would. */
import { describe, expect, it } from "vitest";
import { runHandler } from "switchyard/testing";
import echo from "./echo.js";

describe("echo", () => {
  it("returns its input and reports a small cost", async () => {
    const run = await runHandler(echo, { input: { task: { n: 1 }, steps: {} } });
    expect(run.output).toEqual({ task: { n: 1 }, steps: {} });
    expect(run.usage.cost).toBeCloseTo(0.1);
  });
});

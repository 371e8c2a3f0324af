/** The researcher delegates to role:analyst and combines the answer with its own findings (two turns). */
import { describe, expect, it } from "vitest";
import { runHandler } from "switchyard/testing";
import analyst from "./analyst.js";
import researcher from "./researcher.js";

describe("researcher", () => {
  it("asks the analyst about the task's topic and folds the analysis into its findings", async () => {
    const run = await runHandler(researcher, { input: { task: { topic: "tides" }, steps: {} }, stepId: "research" }, {
      // The real analyst answers: its own unit, run through the same kit.
      delegateReply: async (query) => (await runHandler(analyst, { input: query.payload })).output,
    });
    expect(run.queries.map((q) => [q.to, q.payload, q.correlationId])).toEqual([["role:analyst", { topic: "tides" }, "analysis:research"]]);
    expect(run.output).toMatchObject({ topic: "tides", findings: ["background on tides", "recent developments in tides"], analysis: { summary: "tides is worth a closer look" } });
    expect(run.usage.cost).toBeCloseTo(0.5);
  });

  it("fails (and is retried) when the analyst failed", async () => {
    const failing = runHandler(researcher, { input: "tides" }, {
      delegateReply: () => {
        throw new Error("model overloaded");
      },
    });
    await expect(failing).rejects.toThrow("the analyst failed: HANDLER_FAILED model overloaded");
  });
});

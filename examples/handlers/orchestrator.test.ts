/** The orchestrator fans out to three specialists and finishes when every answer is in, a failure noted. */
import { describe, expect, it } from "vitest";
import { NonRetryableError } from "switchyard/harness";
import { runHandler } from "switchyard/testing";
import orchestrator, { type TurnNote } from "./orchestrator.js";

describe("orchestrator", () => {
  it("asks three destinations in one turn, takes one reply per turn and combines what came back", async () => {
    const run = await runHandler(orchestrator, { input: { task: { topic: "kelp" }, steps: {} }, stepId: "gather" }, {
      delegateReply: (query) => {
        if (query.to === "foreign:fact-checker") return { findings: ["kelp grows fast (checked)"] };
        if (query.to === "role:critic") throw new NonRetryableError("critic is off today", { code: "CRITIC_OFF" });
        return { summary: "kelp is worth a closer look" };
      },
    });
    expect(run.turns.map((t) => t.outcome)).toEqual(["delegated", "delegated", "delegated", "completed"]);
    expect(run.turns[0]!.asked.map((q) => q.to)).toEqual(["foreign:fact-checker", "role:critic", "role:analyst"]);
    const output = run.output as { findings: string[]; analysis: unknown; failed: Record<string, string>; turns: TurnNote[] };
    expect(output.findings).toEqual(["kelp grows fast (checked)"]);
    expect(output.analysis).toEqual({ summary: "kelp is worth a closer look" });
    expect(output.failed).toEqual({ critique: "CRITIC_OFF: critic is off today" });
    expect(output.turns.map((t) => [t.took, t.outstanding])).toEqual([["fact-check", ["critique", "analysis"]], ["critique", ["analysis"]], ["analysis", []]]);
    expect(run.orphans).toEqual([]);
  });

  it("fails when no specialist answered", async () => {
    const none = runHandler(orchestrator, { input: "kelp" }, {
      delegateReply: () => {
        throw new Error("down");
      },
    });
    await expect(none).rejects.toThrow(/no specialist answered/);
  });
});

/**
 * The transition table read as a whole: final statuses have no way out, every open status has a way to end, and a
 * move the table does not list is refused with an internal error naming it (a bug in decision code, found where
 * it happens).
 */
import { describe, expect, it } from "vitest";
import { TERMINAL_STEP_STATUSES, TERMINAL_TASK_STATUSES, type StepStatus } from "../../src/core/model.js";
import { STEP_TRANSITIONS, TASK_TRANSITIONS, isStepTransition, nextStepStatus, nextTaskStatus } from "../../src/core/transitions.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";

const OPEN_STEPS: StepStatus[] = ["pending", "held", "dispatched", "retrying", "parked", "waiting"];

describe("the transition table", () => {
  it("has no row out of a final status, of a step or of a task", () => {
    expect(STEP_TRANSITIONS.filter((t) => TERMINAL_STEP_STATUSES.includes(t.from))).toEqual([]);
    expect(TASK_TRANSITIONS.filter((t) => TERMINAL_TASK_STATUSES.includes(t.from))).toEqual([]);
  });

  it("lets every open step fail or be cancelled, and completes only a dispatched attempt", () => {
    for (const status of OPEN_STEPS) {
      expect(nextStepStatus(status, "fail")).toBe("failed");
      expect(nextStepStatus(status, "cancel")).toBe("cancelled");
    }
    expect(STEP_TRANSITIONS.filter((t) => t.to === "completed").map((t) => t.from)).toEqual(["dispatched"]);
  });

  it("refuses a move it does not list, naming the status and the event", () => {
    const refused = (() => {
      try {
        nextStepStatus("completed", "dispatch");
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(SwitchyardError);
    expect(refused).toMatchObject({ code: ErrorCode.Internal, message: "decide: a step cannot dispatch from completed (no such transition)" });
    expect(() => nextTaskStatus("cancelled", "resume")).toThrow(/task cannot resume from cancelled/);
    expect(() => nextStepStatus("pending", "stand_down")).toThrow(/cannot stand down from pending/);
  });

  it("answers whether a change is one of its rows", () => {
    expect(isStepTransition("dispatched", "waiting")).toBe(true);
    expect(isStepTransition("waiting", "completed")).toBe(false);
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parsePushNotification, type ParsedPushNotification } from "../../../src/foreign/a2a/push-body.js";
import { artifactKnown, foreignOutput, mergeArtifacts } from "../../../src/foreign/a2a/artifacts.js";
import { foreignTaskState, isTerminalForeignState } from "../../../src/foreign/a2a/task-state.js";
import { ErrorCode, SwitchyardError } from "../../../src/errors.js";

const A2A_JSON = "application/a2a+json";
const JSON_TYPE = "application/json";
const LIMIT = { maxBytes: 64 * 1024 };

function parse(body: unknown, contentType = A2A_JSON): ParsedPushNotification {
  return parsePushNotification(contentType, Buffer.from(typeof body === "string" ? body : JSON.stringify(body)), LIMIT);
}

function refusal(fn: () => unknown): SwitchyardError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SwitchyardError);
    return error as SwitchyardError;
  }
  throw new Error("expected the body to be refused");
}

const TASK_ID = "5f1c2a77-1c54-4e8e-9a1f-0d0b8f6b1c11";

describe("parsePushNotification: v1.0 StreamResponse", () => {
  it("reads a task snapshot with artifacts and a status message", () => {
    const parsed = parse({
      task: {
        id: TASK_ID,
        contextId: "ctx-1",
        status: {
          state: "TASK_STATE_COMPLETED",
          timestamp: "2026-01-01T00:00:00Z",
          message: { messageId: "m", role: "ROLE_AGENT", parts: [{ text: "done" }, { data: { ignored: true } }, { text: "really" }] },
        },
        artifacts: [
          { artifactId: "a1", name: "report", parts: [{ data: { total: 3 }, mediaType: "application/json" }, { text: "hello" }] },
          { artifactId: "a2", parts: [{ url: "https://files.example.com/x.pdf", filename: "x.pdf", mediaType: "application/pdf" }, { raw: "aGVsbG8=" }] },
        ],
        history: [{ messageId: "ignored", role: "ROLE_USER", parts: [{ text: "hi" }] }],
      },
    });
    expect(parsed).toEqual({
      dialect: "1.0",
      kind: "task",
      foreignTaskId: TASK_ID,
      contextId: "ctx-1",
      state: "completed",
      final: true,
      complete: true,
      message: "done\nreally",
      artifacts: [
        { artifactId: "a1", name: "report", parts: [{ total: 3 }, "hello"] },
        { artifactId: "a2", parts: [{ file: { name: "x.pdf", mediaType: "application/pdf", url: "https://files.example.com/x.pdf" } }, { file: { bytes: 5 } }] },
      ],
    });
  });

  it.each([
    ["TASK_STATE_SUBMITTED", "submitted", false],
    ["TASK_STATE_WORKING", "working", false],
    ["TASK_STATE_INPUT_REQUIRED", "input_required", false],
    ["TASK_STATE_AUTH_REQUIRED", "auth_required", false],
    ["TASK_STATE_FAILED", "failed", true],
    ["TASK_STATE_CANCELED", "canceled", true],
    ["TASK_STATE_REJECTED", "rejected", true],
    ["TASK_STATE_UNSPECIFIED", "unknown", false],
    [0, "unknown", false],
    [3, "completed", true],
  ])("reads a status update in state %j as %s (final %s)", (state, expected, final) => {
    const parsed = parse({ statusUpdate: { taskId: TASK_ID, contextId: "c", status: { state } } });
    expect(parsed).toMatchObject({ kind: "statusUpdate", foreignTaskId: TASK_ID, state: expected, final, artifacts: [] });
  });

  it("reads an artifact update (no state), keeping the append flag", () => {
    const parsed = parse({ artifactUpdate: { taskId: TASK_ID, contextId: "c", artifact: { artifactId: "r", parts: [{ data: [1, 2] }] }, append: true, lastChunk: false } });
    expect(parsed).toEqual({
      dialect: "1.0",
      kind: "artifactUpdate",
      foreignTaskId: TASK_ID,
      contextId: "c",
      final: false,
      complete: false,
      artifacts: [{ artifactId: "r", parts: [[1, 2]], append: true }],
    });
    expect(parsed.state).toBeUndefined();
  });

  it("reads a message within a task (no state)", () => {
    const parsed = parse({ message: { messageId: "m1", taskId: TASK_ID, contextId: "c", role: "ROLE_AGENT", parts: [{ text: "progress: 50%" }] } });
    expect(parsed).toMatchObject({ kind: "message", foreignTaskId: TASK_ID, final: false, message: "progress: 50%", artifacts: [] });
  });

  it("accepts application/json and a utf-8 charset for v1.0 bodies", () => {
    const body = { statusUpdate: { taskId: TASK_ID, status: { state: "TASK_STATE_WORKING" } } };
    expect(parse(body, "application/json").state).toBe("working");
    expect(parse(body, "Application/A2A+JSON; charset=UTF-8").state).toBe("working");
  });
});

describe("parsePushNotification: v0.3 bodies", () => {
  it("reads the Task snapshot (kind: task) the JS SDK sends, unwrapping compat data parts and dropping bytes", () => {
    const parsed = parse(
      {
        kind: "task",
        id: TASK_ID,
        contextId: "ctx",
        status: { state: "completed", message: { kind: "message", messageId: "m", role: "agent", parts: [{ kind: "text", text: "ok" }] } },
        artifacts: [
          {
            artifactId: "result",
            name: "result",
            parts: [
              { kind: "data", data: { echo: { a: 1 } } },
              { kind: "data", data: { value: [1, 2] }, metadata: { data_part_compat: true } },
              { kind: "text", text: "t" },
              { kind: "file", file: { bytes: "AAAA", mimeType: "image/png", name: "p.png" } },
              { kind: "file", file: { uri: "https://f.example.com/x" } },
            ],
          },
        ],
      },
      JSON_TYPE,
    );
    expect(parsed).toEqual({
      dialect: "0.3",
      kind: "task",
      foreignTaskId: TASK_ID,
      contextId: "ctx",
      state: "completed",
      final: true,
      complete: true,
      message: "ok",
      artifacts: [
        {
          artifactId: "result",
          name: "result",
          parts: [{ echo: { a: 1 } }, [1, 2], "t", { file: { name: "p.png", mediaType: "image/png", bytes: 3 } }, { file: { url: "https://f.example.com/x" } }],
        },
      ],
    });
  });

  it.each([
    ["submitted", "submitted", false],
    ["working", "working", false],
    ["input-required", "input_required", false],
    ["auth-required", "auth_required", false],
    ["failed", "failed", true],
    ["canceled", "canceled", true],
    ["rejected", "rejected", true],
    ["unknown", "unknown", false],
  ])("reads a v0.3 task in state %s as %s", (state, expected, final) => {
    expect(parse({ kind: "task", id: TASK_ID, status: { state } }, JSON_TYPE)).toMatchObject({ state: expected, final });
  });

  it("reads bare v0.3 status-update, artifact-update and message events", () => {
    expect(parse({ kind: "status-update", taskId: TASK_ID, contextId: "c", status: { state: "working" }, final: false }, JSON_TYPE)).toMatchObject({
      dialect: "0.3",
      kind: "statusUpdate",
      state: "working",
      final: false,
    });
    expect(parse({ kind: "artifact-update", taskId: TASK_ID, contextId: "c", artifact: { artifactId: "a", parts: [{ kind: "text", text: "x" }] } }, JSON_TYPE)).toMatchObject({
      kind: "artifactUpdate",
      artifacts: [{ artifactId: "a", parts: ["x"] }],
    });
    expect(parse({ kind: "message", messageId: "m", taskId: TASK_ID, role: "agent", parts: [{ kind: "text", text: "hey" }] }, JSON_TYPE)).toMatchObject({
      kind: "message",
      message: "hey",
    });
  });
});

describe("parsePushNotification refuses malformed bodies", () => {
  const ok = { statusUpdate: { taskId: TASK_ID, status: { state: "TASK_STATE_WORKING" } } };

  it.each([
    ["text/plain", "text/plain"],
    ["no content type", undefined],
    ["form data", "application/x-www-form-urlencoded"],
    ["a non-UTF-8 charset", "application/json; charset=latin1"],
  ])("with %s (UNSUPPORTED_MEDIA_TYPE)", (_what, contentType) => {
    const error = refusal(() => parsePushNotification(contentType, Buffer.from(JSON.stringify(ok)), LIMIT));
    expect(error.code).toBe(ErrorCode.InvalidArgument);
    expect(error.details.reason).toBe("UNSUPPORTED_MEDIA_TYPE");
  });

  it("over the size cap (PAYLOAD_TOO_LARGE, BODY_TOO_LARGE), before parsing it", () => {
    const body = Buffer.from(JSON.stringify({ task: { id: TASK_ID, status: { state: "TASK_STATE_COMPLETED" }, metadata: { pad: "x".repeat(2_000) } } }));
    const error = refusal(() => parsePushNotification(A2A_JSON, body, { maxBytes: 1_000 }));
    expect(error.code).toBe(ErrorCode.PayloadTooLarge);
    expect(error.details).toMatchObject({ reason: "BODY_TOO_LARGE", maxBytes: 1_000 });
    // The same body under a big enough cap is fine.
    expect(parsePushNotification(A2A_JSON, body, { maxBytes: 10_000 }).final).toBe(true);
  });

  it.each<[string, string | Buffer, string]>([
    ["an empty body", "", "EMPTY_BODY"],
    ["invalid UTF-8", Buffer.from([0x7b, 0xc3, 0x28, 0x7d]), "INVALID_ENCODING"],
    ["text that is not JSON", "{task:", "INVALID_JSON"],
    ["a JSON array", "[]", "INVALID_SHAPE"],
    ["a JSON string", '"task"', "INVALID_SHAPE"],
    ["deep nesting", `{"task":${"[".repeat(100)}${"]".repeat(100)}}`, "TOO_DEEP"],
    ["no StreamResponse member", JSON.stringify({ hello: 1 }), "INVALID_SHAPE"],
    ["two StreamResponse members", JSON.stringify({ ...ok, task: { id: TASK_ID, status: { state: "TASK_STATE_WORKING" } } }), "INVALID_SHAPE"],
    ["a member that is not an object", JSON.stringify({ statusUpdate: "completed" }), "INVALID_SHAPE"],
    ["a status update without a task id", JSON.stringify({ statusUpdate: { status: { state: "TASK_STATE_COMPLETED" } } }), "MISSING_TASK_ID"],
    ["an empty task id", JSON.stringify({ task: { id: "", status: { state: "TASK_STATE_COMPLETED" } } }), "MISSING_TASK_ID"],
    ["a task id with control characters", JSON.stringify({ task: { id: "abc\ndef", status: { state: "TASK_STATE_COMPLETED" } } }), "MISSING_TASK_ID"],
    ["a task id of 300 characters", JSON.stringify({ task: { id: "x".repeat(300), status: { state: "TASK_STATE_COMPLETED" } } }), "MISSING_TASK_ID"],
    ["a numeric task id", JSON.stringify({ task: { id: 42, status: { state: "TASK_STATE_COMPLETED" } } }), "MISSING_TASK_ID"],
    ["a task without a status", JSON.stringify({ task: { id: TASK_ID } }), "INVALID_SHAPE"],
    ["a status without a state", JSON.stringify({ statusUpdate: { taskId: TASK_ID, status: {} } }), "INVALID_SHAPE"],
    ["a v1.0 state that is no state", JSON.stringify({ statusUpdate: { taskId: TASK_ID, status: { state: "TASK_STATE_FROM_THE_FUTURE" } } }), "INVALID_STATE"],
    ["a v1.0 enum number out of range", JSON.stringify({ statusUpdate: { taskId: TASK_ID, status: { state: 9 } } }), "INVALID_STATE"],
    ["a v1.0 state in the wrong case", JSON.stringify({ task: { id: TASK_ID, status: { state: "task_state_completed" } } }), "INVALID_STATE"],
    ["a v0.3 state that is no state", JSON.stringify({ kind: "task", id: TASK_ID, status: { state: "done" } }), "INVALID_STATE"],
    ["a v0.3 state in snake case", JSON.stringify({ kind: "status-update", taskId: TASK_ID, status: { state: "input_required" } }), "INVALID_STATE"],
    ["a message without a task id", JSON.stringify({ message: { messageId: "m", role: "ROLE_AGENT", parts: [] } }), "MISSING_TASK_ID"],
    ["artifacts that are not a list", JSON.stringify({ task: { id: TASK_ID, status: { state: "TASK_STATE_COMPLETED" }, artifacts: {} } }), "INVALID_SHAPE"],
    ["an artifact without parts", JSON.stringify({ artifactUpdate: { taskId: TASK_ID, artifact: { artifactId: "a" } } }), "INVALID_SHAPE"],
    ["a part with two contents", JSON.stringify({ artifactUpdate: { taskId: TASK_ID, artifact: { artifactId: "a", parts: [{ text: "x", data: 1 }] } } }), "INVALID_PART"],
    ["a part with no content", JSON.stringify({ artifactUpdate: { taskId: TASK_ID, artifact: { artifactId: "a", parts: [{ mediaType: "x" }] } } }), "INVALID_PART"],
    ["a non-boolean append", JSON.stringify({ artifactUpdate: { taskId: TASK_ID, append: "yes", artifact: { artifactId: "a", parts: [] } } }), "INVALID_SHAPE"],
    ["an unknown v0.3 kind", JSON.stringify({ kind: "telegram", id: TASK_ID }), "INVALID_SHAPE"],
    ["a v0.3 kind mixed with v1.0 members", JSON.stringify({ kind: "task", id: TASK_ID, status: { state: "completed" }, task: {} }), "INVALID_SHAPE"],
    ["a v0.3 data part whose data is not an object", JSON.stringify({ kind: "task", id: TASK_ID, status: { state: "completed" }, artifacts: [{ artifactId: "a", parts: [{ kind: "data", data: 3 }] }] }), "INVALID_PART"],
    ["a v0.3 part of unknown kind", JSON.stringify({ kind: "task", id: TASK_ID, status: { state: "completed" }, artifacts: [{ artifactId: "a", parts: [{ kind: "video" }] }] }), "INVALID_PART"],
  ])("with %s (%s)", (_what, body, reason) => {
    const error = refusal(() => parsePushNotification(A2A_JSON, typeof body === "string" ? Buffer.from(body) : body, LIMIT));
    expect(error.code).toBe(ErrorCode.InvalidArgument);
    expect(error.details.reason).toBe(reason);
  });

  it("with more artifacts or parts than allowed", () => {
    const many = { task: { id: TASK_ID, status: { state: "TASK_STATE_COMPLETED" }, artifacts: Array.from({ length: 5 }, (_, i) => ({ artifactId: `a${i}`, parts: [{ text: "x" }] })) } };
    expect(refusal(() => parsePushNotification(A2A_JSON, Buffer.from(JSON.stringify(many)), { ...LIMIT, maxArtifacts: 4 })).details.reason).toBe("TOO_MANY_ARTIFACTS");
    const parts = { artifactUpdate: { taskId: TASK_ID, artifact: { artifactId: "a", parts: Array.from({ length: 5 }, () => ({ text: "x" })) } } };
    expect(refusal(() => parsePushNotification(A2A_JSON, Buffer.from(JSON.stringify(parts)), { ...LIMIT, maxPartsPerArtifact: 4 })).details.reason).toBe("TOO_MANY_PARTS");
  });

  it("never throws anything but a SwitchyardError on arbitrary bytes or JSON", () => {
    const check = (body: Buffer, contentType: string) => {
      try {
        parsePushNotification(contentType, body, LIMIT);
      } catch (error) {
        if (!(error instanceof SwitchyardError)) throw error;
        expect([ErrorCode.InvalidArgument, ErrorCode.PayloadTooLarge]).toContain(error.code);
      }
    };
    fc.assert(fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => check(Buffer.from(bytes), A2A_JSON)), { numRuns: 300 });
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.constantFrom("task", "statusUpdate", "artifactUpdate", "message", "kind"), (value, key) => {
        check(Buffer.from(JSON.stringify({ [key]: value })), A2A_JSON);
        check(Buffer.from(JSON.stringify(value)), JSON_TYPE);
      }),
      { numRuns: 500 },
    );
  });
});

describe("artifact helpers", () => {
  it("mergeArtifacts replaces by id, appends parts when marked append, and keeps first-seen order", () => {
    const merged = mergeArtifacts(
      [
        { artifactId: "a", parts: [1] },
        { artifactId: "b", parts: ["x"] },
      ],
      [
        { artifactId: "b", parts: ["y"], append: true },
        { artifactId: "a", parts: [2] },
        { artifactId: "c", parts: [true], append: true },
      ],
    );
    expect(merged).toEqual([
      { artifactId: "a", parts: [2] },
      // Assembled from appended chunks (or started by one): marked, so a status push confirms them with GetTask.
      { artifactId: "b", parts: ["x", "y"], chunked: true },
      { artifactId: "c", parts: [true], chunked: true },
    ]);
    // The mark never reaches the output.
    expect(foreignOutput(merged)).toEqual({ artifacts: [{ artifactId: "a", parts: [2] }, { artifactId: "b", parts: ["xy"] }, { artifactId: "c", parts: [true] }] });
  });

  it("artifactKnown: a whole artifact already there, or a chunk whose parts already appear in order", () => {
    const collected = [{ artifactId: "r", parts: [{ chunk: 1 }, { chunk: 2 }, { chunk: 3 }] }];
    expect(artifactKnown(collected, { artifactId: "r", parts: [{ chunk: 1 }, { chunk: 2 }, { chunk: 3 }] })).toBe(true);
    expect(artifactKnown(collected, { artifactId: "r", parts: [{ chunk: 2 }], append: true })).toBe(true);
    expect(artifactKnown(collected, { artifactId: "r", parts: [{ chunk: 2 }, { chunk: 3 }], append: true })).toBe(true);
    expect(artifactKnown(collected, { artifactId: "r", parts: [{ chunk: 3 }, { chunk: 2 }], append: true })).toBe(false);
    expect(artifactKnown(collected, { artifactId: "r", parts: [{ chunk: 2 }] })).toBe(false);
    expect(artifactKnown(collected, { artifactId: "other", parts: [{ chunk: 1 }] })).toBe(false);
  });

  it("foreignOutput is the single part's value, or every artifact when there are several", () => {
    expect(foreignOutput([{ artifactId: "a", parts: [{ total: 3 }] }])).toEqual({ total: 3 });
    expect(foreignOutput([])).toEqual({ artifacts: [] });
    expect(foreignOutput([{ artifactId: "a", name: "n", parts: [1, 2] }])).toEqual({ artifacts: [{ artifactId: "a", name: "n", parts: [1, 2] }] });
  });

  it("foreignTaskState accepts both dialects' spellings and nothing else", () => {
    expect(foreignTaskState("TASK_STATE_INPUT_REQUIRED")).toBe("input_required");
    expect(foreignTaskState("input-required")).toBe("input_required");
    expect(foreignTaskState("INPUT_REQUIRED")).toBe("unknown");
    expect(foreignTaskState("__proto__")).toBe("unknown");
    expect(foreignTaskState(8)).toBe("auth_required");
    expect(foreignTaskState(9)).toBe("unknown");
    expect(foreignTaskState(null)).toBe("unknown");
    expect(["completed", "failed", "canceled", "rejected"].every((s) => isTerminalForeignState(foreignTaskState(s)))).toBe(true);
    expect(isTerminalForeignState("input_required")).toBe(false);
    expect(isTerminalForeignState(undefined)).toBe(false);
  });
});

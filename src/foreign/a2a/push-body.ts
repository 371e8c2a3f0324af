/**
 * Parsing the body of an A2A push notification. The body is untrusted input from outside the perimeter (the
 * callback route verifies tokens first, but a verified sender can still send garbage): size is capped before
 * decoding, UTF-8 is strict, nesting is bounded, and the shape is checked field by field. Anything malformed throws
 * INVALID_ARGUMENT (PAYLOAD_TOO_LARGE for size) with `details.reason`, so the route answers 4xx with that reason.
 *
 * Accepted shapes:
 * - v1.0: a StreamResponse with exactly one of `task` | `statusUpdate` | `artifactUpdate` | `message`
 *   (`application/a2a+json`, which the JS SDK sends, or `application/json`). Enum values are ProtoJSON names.
 * - v0.3: a bare event with a `kind` discriminator (`application/json`). The JS SDK's compat layer and the spec's
 *   example send the Task snapshot (`kind: "task"`) for every update; other SDKs may send `status-update`,
 *   `artifact-update` or `message`, which are accepted too.
 * Which dialect a body is in is decided by its shape (a top-level `kind` means v0.3), not by the content type: the
 * content type only has to be one of the two JSON types.
 *
 * The result says what the body claims; correlating `foreignTaskId` with the bridge is the caller's job.
 */
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { messageText, normalizeArtifact, normalizeArtifacts, statusMessageArtifact, type ArtifactLimits, type ForeignArtifact } from "./artifacts.js";
import { isTerminalForeignState, parseForeignTaskState, WIRE_STATE_NAMES, type A2ADialect, type ForeignTaskState } from "./task-state.js";
import { isJsonObject, malformed, optionalString, parseUntrustedJson, requireId, type JsonObject } from "./untrusted-json.js";
import type { ForeignUsage } from "../bridge-transition.js";
import { firstUsage } from "../pricing.js";

export type PushKind = "task" | "statusUpdate" | "artifactUpdate" | "message";

export interface ParsedPushNotification {
  dialect: A2ADialect;
  kind: PushKind;
  foreignTaskId: string;
  contextId?: string;
  /** The state the body reports; absent for artifact updates and messages, which carry none. */
  state?: ForeignTaskState;
  /** Whether `state` is terminal (completed, failed, canceled, rejected): the push that resumes the step. */
  final: boolean;
  /**
   * Artifacts in the body. For `kind: "task"` this is the complete list as of the snapshot; for an artifact update
   * a single artifact, possibly marked `append`. Fold them with `mergeArtifacts`.
   */
  artifacts: ForeignArtifact[];
  /** Text of the status message (or of the message, for `kind: "message"`), capped. */
  message?: string;
  /** A Task snapshot's status message parts as an artifact: the answer when the task completes without one. */
  statusAnswer?: ForeignArtifact;
  /** Usage reported in the event's `metadata` or its status message's (pricing.ts); absent when none is usable. */
  usage?: ForeignUsage;
  /**
   * Whether `artifacts` is the task's complete list: true for a Task snapshot (`kind: "task"`, what the JS SDK's v0.3
   * layer pushes for every update), so a terminal snapshot resolves the bridge without a confirming GetTask.
   */
  complete: boolean;
}

export interface PushParseOptions extends ArtifactLimits {
  /** Largest body accepted, in bytes. */
  maxBytes: number;
}

const ACCEPTED_MEDIA_TYPES = ["application/json", "application/a2a+json"];
const V1_KEYS: readonly PushKind[] = ["task", "statusUpdate", "artifactUpdate", "message"];
const V03_KINDS: Readonly<Record<string, PushKind>> = {
  task: "task",
  "status-update": "statusUpdate",
  "artifact-update": "artifactUpdate",
  message: "message",
};

export function parsePushNotification(contentType: string | undefined, rawBody: Buffer, options: PushParseOptions): ParsedPushNotification {
  checkMediaType(contentType);
  if (rawBody.length > options.maxBytes) {
    throw new SwitchyardError(ErrorCode.PayloadTooLarge, `push notification body of ${rawBody.length} bytes exceeds ${options.maxBytes}`, {
      details: { reason: "BODY_TOO_LARGE", maxBytes: options.maxBytes },
    });
  }
  if (rawBody.length === 0) throw malformed("EMPTY_BODY", "push notification body is empty");
  const body = parseUntrustedJson(rawBody, "push notification body");
  if (!isJsonObject(body)) throw malformed("INVALID_SHAPE", "push notification body must be a JSON object", "$");
  const parsed = "kind" in body ? parseV03(body, options) : parseV1(body, options);
  const event = "kind" in body ? body : body[parsed.kind];
  return withUsage(parsed, event);
}

/**
 * Usage travels in the event's own `metadata` (a Task's, a status update's, a message's) or in its status message's
 * metadata; the event's wins. Artifact metadata is not read: it describes one (possibly partial) artifact.
 */
function withUsage(parsed: ParsedPushNotification, event: unknown): ParsedPushNotification {
  if (!isJsonObject(event)) return parsed;
  const status = isJsonObject(event.status) ? event.status : undefined;
  const statusMessage = status && isJsonObject(status.message) ? status.message : undefined;
  const usage = firstUsage(event.metadata, statusMessage?.metadata);
  return usage ? { ...parsed, usage } : parsed;
}

function checkMediaType(contentType: string | undefined): void {
  const [type = "", ...params] = (contentType ?? "").split(";").map((piece) => piece.trim().toLowerCase());
  if (!ACCEPTED_MEDIA_TYPES.includes(type)) {
    throw malformed("UNSUPPORTED_MEDIA_TYPE", `push notifications must be application/a2a+json or application/json, got ${JSON.stringify(contentType ?? "")}`);
  }
  const charset = params.find((p) => p.startsWith("charset="))?.slice("charset=".length).replace(/"/g, "");
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
    throw malformed("UNSUPPORTED_MEDIA_TYPE", `push notifications must be UTF-8, got charset ${charset}`);
  }
}

function parseV1(body: JsonObject, limits: ArtifactLimits): ParsedPushNotification {
  const present = V1_KEYS.filter((key) => body[key] !== undefined && body[key] !== null);
  if (present.length !== 1) {
    throw malformed("INVALID_SHAPE", "a v1.0 push must be a StreamResponse with exactly one of task, statusUpdate, artifactUpdate, message", "$");
  }
  const kind = present[0]!;
  const event = body[kind];
  if (!isJsonObject(event)) throw malformed("INVALID_SHAPE", `${kind} must be an object`, `$.${kind}`);
  return parseEvent("1.0", kind, event, `$.${kind}`, limits);
}

function parseV03(body: JsonObject, limits: ArtifactLimits): ParsedPushNotification {
  const kind = typeof body.kind === "string" && Object.hasOwn(V03_KINDS, body.kind) ? V03_KINDS[body.kind]! : undefined;
  if (kind === undefined) throw malformed("INVALID_SHAPE", `unknown v0.3 event kind ${JSON.stringify(body.kind)}`, "$.kind");
  if (V1_KEYS.some((key) => body[key] !== undefined)) {
    throw malformed("INVALID_SHAPE", "body mixes the v0.3 `kind` shape with v1.0 StreamResponse fields", "$");
  }
  return parseEvent("0.3", kind, body, "$", limits);
}

function parseEvent(dialect: A2ADialect, kind: PushKind, event: JsonObject, path: string, limits: ArtifactLimits): ParsedPushNotification {
  const contextId = optionalString(event.contextId, `${path}.contextId`, "contextId") || undefined;
  const base = (foreignTaskId: string) => ({ dialect, kind, foreignTaskId, complete: kind === "task", ...(contextId ? { contextId } : {}) });
  switch (kind) {
    case "task": {
      const foreignTaskId = requireId(event.id, `${path}.id`, "MISSING_TASK_ID", "task id");
      const status = readStatus(event.status, dialect, `${path}.status`);
      const artifacts = normalizeArtifacts(event.artifacts, dialect, `${path}.artifacts`, limits);
      const statusAnswer = isJsonObject(event.status) ? statusMessageArtifact(status.state, artifacts, event.status.message, dialect, limits) : undefined;
      const parsed = { ...base(foreignTaskId), state: status.state, final: isTerminalForeignState(status.state), artifacts, ...(statusAnswer ? { statusAnswer } : {}) };
      return withMessage(parsed, status.message);
    }
    case "statusUpdate": {
      const foreignTaskId = requireId(event.taskId, `${path}.taskId`, "MISSING_TASK_ID", "taskId");
      const status = readStatus(event.status, dialect, `${path}.status`);
      return withMessage({ ...base(foreignTaskId), state: status.state, final: isTerminalForeignState(status.state), artifacts: [] }, status.message);
    }
    case "artifactUpdate": {
      const foreignTaskId = requireId(event.taskId, `${path}.taskId`, "MISSING_TASK_ID", "taskId");
      if (event.append !== undefined && typeof event.append !== "boolean") throw malformed("INVALID_SHAPE", "append must be a boolean", `${path}.append`);
      const artifact = normalizeArtifact(event.artifact, dialect, `${path}.artifact`, limits);
      return { ...base(foreignTaskId), final: false, artifacts: [event.append === true ? { ...artifact, append: true } : artifact] };
    }
    case "message": {
      // A message only means something to us inside a task; one without a task id cannot be correlated.
      const foreignTaskId = requireId(event.taskId, `${path}.taskId`, "MISSING_TASK_ID", "message taskId");
      if (!Array.isArray(event.parts)) throw malformed("INVALID_SHAPE", "message parts must be a list", `${path}.parts`);
      return withMessage({ ...base(foreignTaskId), final: false, artifacts: [] }, messageText(event, dialect));
    }
  }
}

function readStatus(value: unknown, dialect: A2ADialect, path: string): { state: ForeignTaskState; message: string | undefined } {
  if (!isJsonObject(value)) throw malformed("INVALID_SHAPE", "status must be an object", path);
  if (typeof value.state !== "string" && typeof value.state !== "number") throw malformed("INVALID_SHAPE", "status.state is required", `${path}.state`);
  const state = parseForeignTaskState(value.state);
  if (state === undefined) {
    // Answered 400 (the README's contract): storing it as `unknown` would hide a broken agent behind a parked step.
    throw malformed("INVALID_STATE", `status.state ${JSON.stringify(value.state)} is not an A2A task state; use one of ${WIRE_STATE_NAMES.join(", ")} (or a v1.0 enum number 0-8)`, `${path}.state`);
  }
  return { state, message: messageText(value.message, dialect) };
}

function withMessage(parsed: ParsedPushNotification, message: string | undefined): ParsedPushNotification {
  return message === undefined ? parsed : { ...parsed, message };
}

/**
 * The A2A client for FOREIGN hops: send a step to an agent without waiting for it, look a task up, cancel it.
 *
 * Built on `@a2a-js/sdk`'s client for both dialects: `ClientFactory` + `JsonRpcTransportFactory` with the v0.3
 * compatibility layer on, so one code path sends v1.0 `SendMessage` (header `A2A-Version: 1.0`,
 * `configuration.returnImmediately: true`) or v0.3 `message/send` (header `A2A-Version: 0.3`,
 * `configuration.blocking: false` — the SDK translates `returnImmediately`). The injected fetch is given to the
 * transport factory AND to the factory's card resolver, so no SDK path can fall back to the global fetch; cards
 * themselves are fetched by AgentCardCache through the same fetch.
 *
 * The SDK picks the transport from the card's `supportedInterfaces`, preferring a `1.0` interface when both exist.
 * To honour the dialect chosen by the registry's preference, each call hands the SDK a synthesized card with
 * exactly one interface: the endpoint of the requested dialect.
 *
 * Every call has a timeout (on top of the caller's signal) and maps failures to SwitchyardErrors with
 * `details.reason` and `details.retryable` (client-errors.ts). Answers are treated as untrusted like push bodies.
 * A JSON success answer whose id is null (independent servers do this) is handed to the SDK with our request's id
 * (null-id-answer.ts says why that is safe and what is never rewritten).
 */
import { randomUUID } from "node:crypto";
import { AgentCard, Message, Role, Task, type SendMessageRequest } from "@a2a-js/sdk";
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client, type RequestOptions } from "@a2a-js/sdk/client";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { messageText, normalizeArtifact, normalizeArtifacts, statusMessageArtifact, type ArtifactLimits, type ForeignArtifact } from "./artifacts.js";
import type { AgentEndpoint } from "./card-parse.js";
import { callFailure, mapCallError } from "./client-errors.js";
import { messageParts } from "./message-parts.js";
import { foreignTaskState, type A2ADialect, type ForeignTaskState } from "./task-state.js";
import { assertDepth, isJsonObject, requireId } from "./untrusted-json.js";
import { jsonRpcRequestId, withRequestId } from "./null-id-answer.js";
import type { Logger } from "../../logger.js";
import type { ForeignUsage } from "../bridge-transition.js";
import { firstUsage } from "../pricing.js";
import { endSpan, startA2ACallSpan, withTraceHeader } from "../../telemetry/foreign-spans.js";

export interface A2AClientOptions {
  /** The guarded fetch. Tests may pass `globalThis.fetch`; production never should. */
  fetch: typeof globalThis.fetch;
  /** Per-call timeout. @defaultValue 10_000 */
  timeoutMs?: number;
  /** Bounds on artifacts read from GetTask / CancelTask answers. */
  artifactLimits?: ArtifactLimits;
  /** Told (once per client, at debug) that the agent answers successes with `"id": null` (null-id-answer.ts). */
  logger?: Logger;
}

/** The part of a card a call needs (a ResolvedAgentCard fits). */
export interface A2ATarget {
  endpoints: Partial<Record<A2ADialect, AgentEndpoint>>;
  name?: string;
}

export interface ForeignStepMessage {
  /** Our task and step: sent as metadata so the agent (and its logs) can name them. */
  taskId: string;
  stepId: string;
  orgId: string;
  /** The hop's clearance floor, so the agent knows how sensitive the input is. */
  clearanceFloor: number;
  /** The step input: a data part (non-objects wrapped as `{ value }`), a text part, or both, by `inputModes`. */
  input: unknown;
  /** The input modes that apply to this hop (message-parts.ts `modesFor`); absent or empty: a data part. */
  inputModes?: readonly string[];
  /** Defaults to a random UUID. */
  messageId?: string;
}

export interface PushTarget {
  /** Our callback URL (with its signed token in the query). */
  url: string;
  /** The per-bridge secret the agent echoes back (`X-A2A-Notification-Token` from the JS SDK). */
  token: string;
  /**
   * Also ask for `Authorization: Bearer <token>` via the config's `authentication`. The JS SDK then sends ONLY the
   * Authorization header; other SDKs keep sending the token header. @defaultValue false
   */
  bearer?: boolean;
}

export interface A2ASendRequest {
  card: A2ATarget;
  protocol: A2ADialect;
  message: ForeignStepMessage;
  /** Where the agent should push updates; absent for a polled hop (no push config is sent at all). */
  push?: PushTarget;
  signal?: AbortSignal;
}

/**
 * The whole SendMessage answer. A Task (just opened, or already finished when the agent worked before answering)
 * with its artifacts as of the answer; or a Message (the agent answered without opening a task), read as a
 * completed task whose single artifact `message` holds the message's parts.
 */
export interface A2ASendResult {
  answer: "task" | "message";
  /** The task id; for a Message its `taskId`, or `message:<our messageId>` (the bridge id) when it names no task. */
  foreignTaskId: string;
  /** For a Message answer: the agent's own message id (for logs; not unique across agents). */
  agentMessageId?: string;
  state: ForeignTaskState;
  contextId?: string;
  /** Usage the answering Task reported (pricing.ts). */
  usage?: ForeignUsage;
  /** The task's complete artifact list as of the answer. */
  artifacts: ForeignArtifact[];
  /** Text of the status message, capped. */
  message?: string;
  /** The status message's parts as an artifact: the answer when the task completes without one. */
  statusAnswer?: ForeignArtifact;
}

export interface A2ATaskRequest {
  card: A2ATarget;
  protocol: A2ADialect;
  foreignTaskId: string;
  signal?: AbortSignal;
}

export interface ForeignTaskSnapshot {
  foreignTaskId: string;
  state: ForeignTaskState;
  artifacts: ForeignArtifact[];
  /** Text of the status message, capped (e.g. why the task failed). */
  message?: string;
  /** The status message's parts as an artifact: the answer when the task completes without one. */
  statusAnswer?: ForeignArtifact;
  /** Usage reported in the Task's `metadata` or its status message's (pricing.ts). */
  usage?: ForeignUsage;
}

export interface A2AClient {
  /** Opens a task at the agent (asking it to answer at once); answers with whatever the agent answered. */
  send(request: A2ASendRequest): Promise<A2ASendResult>;
  getTask(request: A2ATaskRequest): Promise<ForeignTaskSnapshot>;
  /** Asks the agent to cancel; A2A_NOT_CANCELABLE (FAILED_PRECONDITION) when the task already finished. */
  cancelTask(request: A2ATaskRequest): Promise<ForeignTaskSnapshot>;
}

/** Metadata key under which our identifiers travel with the message. */
export const SWITCHYARD_METADATA_KEY = "switchyard";

export function createA2AClient(options: A2AClientOptions): A2AClient {
  const timeoutMs = options.timeoutMs ?? 10_000;
  /** Success answers that came with `"id": null` (counted; logged once). */
  let nullIdAnswers = 0;

  async function call<T>(method: string, card: A2ATarget, protocol: A2ADialect, signal: AbortSignal | undefined, run: (client: Client, opts: RequestOptions) => Promise<T>): Promise<T> {
    const endpoint = card.endpoints[protocol];
    if (!endpoint) {
      throw callFailure("CARD_NO_PROTOCOL", ErrorCode.FailedPrecondition, `the agent's card has no JSON-RPC endpoint for A2A ${protocol}`, false, { method });
    }
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const observed: { status?: number } = {};
    // Tracing on only: a span per call, whose traceparent the request carries.
    const span = startA2ACallSpan(method, endpoint.url);
    const observingFetch: typeof globalThis.fetch = async (input, init) => {
      const answer = await options.fetch(input, withTraceHeader(init, span));
      observed.status = answer.status;
      span?.setAttribute("http.response.status_code", answer.status);
      // A success answer with `"id": null` to our one request is still ours (null-id-answer.ts).
      const { response, rewritten } = await withRequestId(answer, jsonRpcRequestId(init?.body));
      if (rewritten) {
        nullIdAnswers += 1;
        if (nullIdAnswers === 1) options.logger?.debug({ method, endpoint: endpoint.url }, "foreign agent answers JSON-RPC successes with id null; accepted as the answer to our request");
      }
      return response;
    };
    try {
      const client = await sdkClient(endpoint, protocol, card.name ?? "", observingFetch);
      const result = await run(client, { signal: combined });
      endSpan(span);
      return result;
    } catch (error) {
      const mapped = mapCallError(error, { method, endpoint: endpoint.url, httpStatus: observed.status, signal, timeout, timeoutMs });
      endSpan(span, mapped);
      throw mapped;
    }
  }

  return {
    async send({ card, protocol, message, push, signal }) {
      const request = sendMessageRequest(message, push);
      const result = await call(protocol === "1.0" ? "SendMessage" : "message/send", card, protocol, signal, (client, opts) => client.sendMessage(request, opts));
      // The SDK answers v1.0 types for both dialects (its v0.3 layer translates `kind: "message"` / `"task"`).
      if (!("status" in result) || !("id" in result)) return readMessageAnswer(result, request.message?.messageId ?? randomUUID(), options.artifactLimits);
      return { answer: "task", ...readTask(result, options.artifactLimits) };
    },

    async getTask({ card, protocol, foreignTaskId, signal }) {
      const task = await call(protocol === "1.0" ? "GetTask" : "tasks/get", card, protocol, signal, (client, opts) =>
        client.getTask({ tenant: "", id: foreignTaskId, historyLength: 0 }, opts),
      );
      return snapshotOf(readTask(task, options.artifactLimits), foreignTaskId);
    },

    async cancelTask({ card, protocol, foreignTaskId, signal }) {
      const task = await call(protocol === "1.0" ? "CancelTask" : "tasks/cancel", card, protocol, signal, (client, opts) =>
        client.cancelTask({ tenant: "", id: foreignTaskId, metadata: undefined }, opts),
      );
      return snapshotOf(readTask(task, options.artifactLimits), foreignTaskId);
    },
  };
}

async function sdkClient(endpoint: AgentEndpoint, protocol: A2ADialect, name: string, fetchImpl: typeof globalThis.fetch): Promise<Client> {
  const card = AgentCard.fromJSON({
    name,
    description: "",
    version: "",
    supportedInterfaces: [{ url: endpoint.url, protocolBinding: "JSONRPC", protocolVersion: protocol, tenant: endpoint.tenant ?? "" }],
    capabilities: { streaming: false, pushNotifications: true },
    defaultInputModes: [],
    defaultOutputModes: [],
    skills: [],
  });
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
  });
  return factory.createFromAgentCard(card);
}

function sendMessageRequest(message: ForeignStepMessage, push: PushTarget | undefined): SendMessageRequest {
  const sdkMessage: Message = {
    messageId: message.messageId ?? randomUUID(),
    contextId: "",
    taskId: "",
    role: Role.ROLE_USER,
    parts: messageParts(message.input, message.inputModes ?? []),
    metadata: {
      [SWITCHYARD_METADATA_KEY]: {
        taskId: message.taskId,
        stepId: message.stepId,
        tenant: message.orgId,
        clearanceFloor: message.clearanceFloor,
      },
    },
    extensions: [],
    referenceTaskIds: [],
  };
  return {
    tenant: "",
    message: sdkMessage,
    configuration: {
      acceptedOutputModes: [],
      taskPushNotificationConfig: push
        ? { tenant: "", id: "", taskId: "", url: push.url, token: push.token, authentication: push.bearer ? { scheme: "Bearer", credentials: push.token } : undefined }
        : undefined,
      historyLength: 0,
      returnImmediately: true,
    },
    metadata: undefined,
  };
}

interface ReadTask extends ForeignTaskSnapshot {
  contextId?: string;
}

/** Reads an SDK Task through its v1.0 JSON form, with the same checks as a push body. */
function readTask(task: Task, limits: ArtifactLimits | undefined): ReadTask {
  try {
    const json = Task.toJSON(task) as Record<string, unknown>;
    assertDepth(json, "the agent's task");
    const foreignTaskId = requireId(json.id, "$.id", "MISSING_TASK_ID", "task id");
    const status = isJsonObject(json.status) ? json.status : {};
    const artifacts = normalizeArtifacts(json.artifacts, "1.0", "$.artifacts", limits);
    const message = messageText(status.message, "1.0");
    const state = foreignTaskState(status.state);
    const statusAnswer = statusMessageArtifact(state, artifacts, status.message, "1.0", limits);
    const contextId = typeof json.contextId === "string" && json.contextId !== "" ? json.contextId : undefined;
    const usage = firstUsage(json.metadata, isJsonObject(status.message) ? status.message.metadata : undefined);
    return {
      foreignTaskId,
      state,
      artifacts,
      ...(message !== undefined ? { message } : {}),
      ...(statusAnswer ? { statusAnswer } : {}),
      ...(contextId !== undefined ? { contextId } : {}),
      ...(usage ? { usage } : {}),
    };
  } catch (error) {
    const why = error instanceof SwitchyardError ? `${error.message} (${String(error.details.reason)})` : String(error);
    throw callFailure("A2A_BAD_RESPONSE", ErrorCode.Unavailable, `the agent's task is unusable: ${why}`, false, {}, error);
  }
}

/**
 * A Message answer: the agent did the work without a task (A2A allows it for quick replies). It is the whole result:
 * its parts become one artifact `message`, and the hop is done (`completed`).
 */
function readMessageAnswer(result: Message, ourMessageId: string, limits: ArtifactLimits | undefined): A2ASendResult {
  try {
    const json = Message.toJSON(result) as Record<string, unknown>;
    assertDepth(json, "the agent's message answer");
    const messageId = requireId(json.messageId, "$.messageId", "MISSING_MESSAGE_ID", "message id");
    const taskId = typeof json.taskId === "string" && json.taskId !== "" ? json.taskId : undefined;
    const artifact = normalizeArtifact({ artifactId: "message", parts: Array.isArray(json.parts) ? json.parts : [] }, "1.0", "$", limits);
    const contextId = typeof json.contextId === "string" && json.contextId !== "" ? json.contextId : undefined;
    const usage = firstUsage(json.metadata);
    return {
      answer: "message",
      // Named by OUR message id (the bridge id, the transport sends it): agents may reuse their own message ids, and
      // two bridges of a tenant must never claim the same stand-in (UNIQUE(org_id, foreign_task_id)). Never
      // mistaken for a task id at GetTask. The agent's id is kept as `agentMessageId`.
      foreignTaskId: taskId ?? `message:${ourMessageId}`,
      agentMessageId: messageId,
      state: "completed",
      artifacts: [artifact],
      ...(contextId !== undefined ? { contextId } : {}),
      ...(usage ? { usage } : {}),
    };
  } catch (error) {
    const why = error instanceof SwitchyardError ? `${error.message} (${String(error.details.reason)})` : String(error);
    throw callFailure("A2A_BAD_RESPONSE", ErrorCode.Unavailable, `the agent's message answer is unusable: ${why}`, false, {}, error);
  }
}

function snapshotOf(task: ReadTask, asked: string): ForeignTaskSnapshot {
  if (task.foreignTaskId !== asked) {
    throw callFailure("A2A_BAD_RESPONSE", ErrorCode.Unavailable, "the agent answered with a different task than the one asked for", false, {
      asked,
      got: task.foreignTaskId,
    });
  }
  const { contextId: _contextId, ...snapshot } = task;
  return snapshot;
}

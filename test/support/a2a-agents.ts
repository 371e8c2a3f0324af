/**
 * Real A2A agents for tests, built with `@a2a-js/sdk` (server + express) on 127.0.0.1, port 0.
 *
 * - `dialect: "1.0"`: v1.0 only. The card lists one JSON-RPC interface at `protocolVersion: "1.0"` and the JSON-RPC
 *   handler has no legacy layer, so a v0.3 request (`A2A-Version` absent or 0.3) is refused.
 * - `dialect: "0.3"`: v0.3 only, from the SDK's compatibility layer: the handler's card lists only a 0.3 interface
 *   (so v1.0 requests get VersionNotSupported), JSON-RPC runs with `legacyCompat`, and pushes go through
 *   `createLegacyAwarePushNotificationSender`, which posts the v0.3 Task snapshot (`kind: "task"`). The well-known
 *   card is a pure v0.3 card (url + preferredTransport + protocolVersion) unless `supersetCard` asks for the SDK's
 *   `legacyAgentCardRouter`, whose v0.3 card always embeds the v1.0 `supportedInterfaces`.
 *
 * Pushes are really sent by the SDK's `DefaultPushNotificationSender` (global fetch, 2 s timeout here, no retries):
 * with only `token` in the client's config it sends `X-A2A-Notification-Token: <token>`; with `authentication` it
 * sends `Authorization: <scheme> <credentials>` and NOT the token header. `pushes` records every body the agent
 * serialised, `received` every message it was asked to work on.
 */
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { AgentCard, Role, TaskState, type Message, type Part, type Task } from "@a2a-js/sdk";
import {
  AgentEvent,
  DefaultPushNotificationSender,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
  V1PushNotificationSerializer,
  type AgentExecutor,
  type ExecutionEventBus,
  type PushNotificationSender,
  type PushNotificationSerializer,
  type RequestContext,
} from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { createLegacyAwarePushNotificationSender, V03PushNotificationSerializer } from "@a2a-js/sdk/compat/v0_3/server";
import { legacyAgentCardRouter } from "@a2a-js/sdk/compat/v0_3/server/express";
import { completeBeforeAnswering, completeInStatusMessage, dataPart, holdingBack, publishChunks, replyWithMessage } from "./a2a-agent-results.js";
import { v03Card, v03Interop, v1Security, type CardInteropOptions } from "./a2a-agent-cards.js";

export type { CardInteropOptions, LabSecurity } from "./a2a-agent-cards.js";

export type AgentDialect = "1.0" | "0.3";

/**
 * - `complete`: submitted → working → artifact → completed, a push for each.
 * - `fail`: submitted → working → failed (with a status message).
 * - `never-finish`: submitted → working, then waits until cancelled (→ canceled).
 * - `no-push`: completes like `complete` but never sends a push (the card still claims push support).
 * - `slow`: like `complete` with long pauses (default 400 ms) between events.
 * - `input-required`: submitted → working → input-required (an interrupted, non-terminal state).
 * - `blocking-complete`: the work is done before SendMessage is answered: the first (and only) event is the Task,
 *   already completed with its artifact, so the answer is a finished Task even though we ask `returnImmediately`.
 * - `message-reply`: answers SendMessage with a Message (the output as its data part) and opens no task.
 * - `status-message-only`: the first and only event is the Task, already completed, its answer (the output, as a
 *   data part, after a text part "done") in `status.message` and no artifact.
 * - `empty-complete`: the first and only event is the Task, already completed, with no artifact and no status message.
 * - `hang`: publishes nothing, so SendMessage is never answered (until the client gives up or the agent closes).
 * - `reordered-pushes`: like `complete`, but the artifact push is held back (`holdMs`, default 300 ms) so the final
 *   status push is sent BEFORE it. (A v0.3 agent pushes Task snapshots, where the final one has the artifact.)
 * - `chunked-out-of-order`: the artifact comes in three append chunks (`{ chunk: 1..3 }`, lastChunk on the third),
 *   then completed; the push of chunk 2 is held back (`holdMs`), so chunk 3 and the final status arrive first.
 */
export type AgentBehaviour =
  | "complete"
  | "fail"
  | "never-finish"
  | "no-push"
  | "slow"
  | "input-required"
  | "blocking-complete"
  | "message-reply"
  | "status-message-only"
  | "empty-complete"
  | "hang"
  | "reordered-pushes"
  | "chunked-out-of-order";

/** The card options (input modes, security) are in a2a-agent-cards.ts. */
export interface StartA2AAgentOptions extends CardInteropOptions {
  dialect: AgentDialect;
  /** Skill ids the card advertises. Default `["echo"]`. */
  skills?: string[];
  /** Whether the card advertises push notifications (and the agent registers push configs). Default true. */
  push?: boolean;
  behaviour?: AgentBehaviour;
  /** Pause in ms before each event after the first (working, artifact, final); one number applies to all. */
  pushDelays?: number | number[];
  /** The artifact's data part from the received data part. Default `{ echo: <data>, by: <agent name> }`. */
  output?: (input: unknown) => unknown;
  name?: string;
  /**
   * v0.3 only: serve the card through the SDK's `legacyAgentCardRouter`, which always embeds the v1.0
   * `supportedInterfaces` next to the v0.3 fields (a "superset" card). By default a pure v0.3 card is served, as a
   * v0.3-only agent (e.g. one built on an older SDK) publishes it.
   */
  supersetCard?: boolean;
  /**
   * Metadata of the final `completed` status (on the status update event and on its status message, which the Task
   * snapshot and GetTask carry too), e.g. `{ usage: { cost: 0.42 } }` for metered-cost tests.
   */
  finalMetadata?: Record<string, unknown>;
  /** How long `reordered-pushes` / `chunked-out-of-order` hold back the push they reorder. Default 300 ms. */
  holdMs?: number;
  /** The artifact's parts instead of the one data part (e.g. several text parts). */
  outputParts?: (input: unknown) => Part[];
}

export interface ReceivedMessage {
  taskId: string;
  contextId: string;
  /** The `A2A-Version` header the request carried ("" when absent). */
  a2aVersion: string;
  /** Data parts' values (text parts as strings), in order. */
  parts: unknown[];
  metadata: Record<string, unknown> | undefined;
  pushConfig: { url: string; token: string; authentication?: { scheme: string; credentials: string } } | undefined;
}

export interface SentPush {
  taskId: string;
  dialect: AgentDialect;
  contentType: string;
  /** The JSON body as posted. */
  body: Record<string, unknown>;
}

export interface RunningA2AAgent {
  readonly baseUrl: string;
  readonly cardUrl: string;
  readonly rpcUrl: string;
  readonly received: ReceivedMessage[];
  readonly pushes: SentPush[];
  /** JSON-RPC calls other than SendMessage the agent served, in order: `getTask:<id>`, `cancelTask:<id>`. */
  readonly calls: string[];
  /** How often the well-known card was requested. */
  readonly cardRequests: () => number;
  /** The W3C `traceparent` header of every JSON-RPC request that carried one (tracing tests). */
  readonly traceparents: string[];
  /** Changes what the card advertises from now on (for cache refresh tests). */
  updateCard(change: { skills?: string[]; push?: boolean }): void;
  /** Makes the card route answer with this status (e.g. 503) until set back to undefined. */
  failCard(status: number | undefined): void;
  close(): Promise<void>;
}

const DEFAULT_DELAYS: Record<AgentBehaviour, number> = {
  complete: 30,
  fail: 30,
  "never-finish": 30,
  "no-push": 30,
  slow: 400,
  "input-required": 30,
  "blocking-complete": 30,
  "message-reply": 30,
  "status-message-only": 30,
  "empty-complete": 30,
  hang: 30,
  "reordered-pushes": 30,
  "chunked-out-of-order": 30,
};

export async function startA2AAgent(options: StartA2AAgentOptions): Promise<RunningA2AAgent> {
  const behaviour = options.behaviour ?? "complete";
  const name = options.name ?? `test-agent-${options.dialect}-${behaviour}`;
  let skills = options.skills ?? ["echo"];
  let push = options.push ?? true;
  let cardStatus: number | undefined;
  let cardCount = 0;
  const received: ReceivedMessage[] = [];
  const pushes: SentPush[] = [];
  const calls: string[] = [];

  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const rpcUrl = `${baseUrl}/a2a/jsonrpc`;

  const card = (): AgentCard =>
    AgentCard.fromJSON({
      name,
      description: `A ${options.dialect} test agent (${behaviour})`,
      version: "1.0.0",
      supportedInterfaces: [{ url: rpcUrl, protocolBinding: "JSONRPC", protocolVersion: options.dialect, tenant: "" }],
      capabilities: { streaming: false, pushNotifications: push },
      defaultInputModes: options.inputModes ?? ["application/json", "text/plain"],
      defaultOutputModes: ["application/json"],
      skills: skills.map((id) => ({ id, name: id, description: `skill ${id}`, tags: ["test"], inputModes: options.skillInputModes?.[id] ?? [] })),
      ...v1Security(options.security),
    });
  // DefaultRequestHandler reads capabilities from the object it was given, so updates mutate that object.
  const liveCard = card();
  const refreshCard = () => Object.assign(liveCard, card());

  const delays = Array.isArray(options.pushDelays) ? options.pushDelays : [];
  const delayAt = (i: number) =>
    typeof options.pushDelays === "number" ? options.pushDelays : (delays[i] ?? delays[delays.length - 1] ?? DEFAULT_DELAYS[behaviour]);

  const pushStore = new InMemoryPushNotificationStore();
  const sender = holdingBack(
    recordingSender(options.dialect, behaviour === "no-push", pushStore, pushes),
    behaviour === "reordered-pushes" ? "reordered" : behaviour === "chunked-out-of-order" ? "chunks" : undefined,
    options.holdMs ?? 300,
  );
  const executor = new TestExecutor({ name, behaviour, delayAt, output: options.output, outputParts: options.outputParts, received, finalMetadata: options.finalMetadata });
  const requestHandler = new DefaultRequestHandler(liveCard, new InMemoryTaskStore(), executor, undefined, pushStore, sender);
  // Record GetTask / CancelTask as served (both dialects reach the same handler methods).
  const getTask = requestHandler.getTask.bind(requestHandler);
  requestHandler.getTask = (params, context) => {
    calls.push(`getTask:${params.id}`);
    return getTask(params, context);
  };
  const cancelTask = requestHandler.cancelTask.bind(requestHandler);
  requestHandler.cancelTask = (params, context) => {
    calls.push(`cancelTask:${params.id}`);
    return cancelTask(params, context);
  };

  const app = express();
  const traceparents: string[] = [];
  app.use("/a2a/jsonrpc", (req, _res, next) => {
    if (typeof req.headers.traceparent === "string") traceparents.push(req.headers.traceparent);
    next();
  });
  app.use("/.well-known/agent-card.json", (_req, res, next) => {
    cardCount += 1;
    if (cardStatus !== undefined) res.status(cardStatus).json({ error: "unavailable" });
    else next();
  });
  if (options.dialect === "1.0") {
    app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: async () => liveCard }));
    app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  } else {
    if (options.supersetCard) {
      // The SDK's v0.3 card router (it embeds the v1.0 supportedInterfaces); a v0.3 agent ignores A2A-Version.
      app.use(
        "/.well-known/agent-card.json",
        (req, _res, next) => {
          delete req.headers["a2a-version"];
          next();
        },
        legacyAgentCardRouter({ agentCardProvider: async () => liveCard }),
      );
    } else {
      app.get("/.well-known/agent-card.json", (_req, res) => {
        res.json({ ...v03Card({ name, description: liveCard.description, url: rpcUrl, push, skills }), ...v03Interop(options) });
      });
    }
    app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
  }
  server.on("request", app);

  let closed = false;
  return {
    baseUrl,
    cardUrl: `${baseUrl}/.well-known/agent-card.json`,
    rpcUrl,
    traceparents,
    received,
    pushes,
    calls,
    cardRequests: () => cardCount,
    updateCard(change) {
      if (change.skills) skills = change.skills;
      if (change.push !== undefined) push = change.push;
      refreshCard();
    },
    failCard(status) {
      cardStatus = status;
    },
    async close() {
      if (closed) return;
      closed = true;
      executor.cancelAll();
      await closeServer(server);
    },
  };
}

/** The SDK's own sender with serializers that record each body; for `no-push` a sender that drops everything. */
function recordingSender(dialect: AgentDialect, silent: boolean, store: InMemoryPushNotificationStore, pushes: SentPush[]): PushNotificationSender {
  if (silent) return { send: async () => {} };
  const recording = (wire: AgentDialect, inner: PushNotificationSerializer): PushNotificationSerializer => ({
    serialize(streamResponse, task) {
      const out = inner.serialize(streamResponse, task);
      const p = streamResponse.payload;
      const taskId = p === undefined ? "" : p.$case === "task" ? p.value.id : p.value.taskId;
      pushes.push({ taskId, dialect: wire, contentType: out.contentType, body: JSON.parse(out.body) as Record<string, unknown> });
      return out;
    },
  });
  if (dialect === "1.0") {
    return new DefaultPushNotificationSender(store, { timeout: 2_000, serializers: { "1.0": recording("1.0", new V1PushNotificationSerializer()) } });
  }
  return createLegacyAwarePushNotificationSender(store, {
    timeout: 2_000,
    serializers: { "0.3": recording("0.3", new V03PushNotificationSerializer()) },
  });
}

interface ExecutorOptions {
  name: string;
  behaviour: AgentBehaviour;
  delayAt: (i: number) => number;
  output: ((input: unknown) => unknown) | undefined;
  outputParts: ((input: unknown) => Part[]) | undefined;
  received: ReceivedMessage[];
  finalMetadata: Record<string, unknown> | undefined;
}

class TestExecutor implements AgentExecutor {
  private readonly cancels = new Map<string, () => void>();

  constructor(private readonly options: ExecutorOptions) {}

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { behaviour, delayAt } = this.options;
    const user = ctx.userMessage;
    const parts = user.parts.map(partValue);
    const pushCfg = ctx.request.configuration?.taskPushNotificationConfig;
    this.options.received.push({
      taskId: ctx.taskId,
      contextId: ctx.contextId,
      a2aVersion: ctx.context.requestedVersion ?? "",
      parts,
      metadata: user.metadata,
      pushConfig: pushCfg
        ? { url: pushCfg.url, token: pushCfg.token, ...(pushCfg.authentication ? { authentication: { ...pushCfg.authentication } } : {}) }
        : undefined,
    });

    let cancelled = false;
    const cancelledSignal = new Promise<void>((resolve) =>
      this.cancels.set(ctx.taskId, () => {
        cancelled = true;
        resolve();
      }),
    );
    const pause = (i: number) => Promise.race([sleep(delayAt(i)), cancelledSignal]);
    const output = () => (this.options.output ? this.options.output(parts[0]) : { echo: parts[0], by: this.options.name });
    if (behaviour === "message-reply" || behaviour === "blocking-complete" || behaviour === "status-message-only" || behaviour === "empty-complete") {
      this.cancels.delete(ctx.taskId);
      const answer = behaviour === "message-reply" ? replyWithMessage : behaviour === "blocking-complete" ? completeBeforeAnswering : completeInStatusMessage;
      answer(ctx, bus, behaviour === "empty-complete" ? undefined : output());
      return;
    }
    if (behaviour === "hang") {
      // Released by a CancelTask or by close() (cancelAll).
      await cancelledSignal;
      this.cancels.delete(ctx.taskId);
      return;
    }
    const task: Task = {
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [user],
      metadata: undefined,
    };
    bus.publish(AgentEvent.task(task));
    try {
      await pause(0);
      if (cancelled) return;
      this.status(ctx, bus, TaskState.TASK_STATE_WORKING);
      if (behaviour === "never-finish") {
        await cancelledSignal;
        return;
      }
      await pause(1);
      if (cancelled) return;
      if (behaviour === "fail") {
        this.status(ctx, bus, TaskState.TASK_STATE_FAILED, "the test agent was told to fail");
        return;
      }
      if (behaviour === "input-required") {
        this.status(ctx, bus, TaskState.TASK_STATE_INPUT_REQUIRED, "need more input");
        return;
      }
      if (behaviour === "chunked-out-of-order") {
        await publishChunks(ctx, bus);
        await pause(2);
        if (cancelled) return;
        this.status(ctx, bus, TaskState.TASK_STATE_COMPLETED);
        return;
      }
      const data = output();
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          artifact: {
            artifactId: "result",
            name: "result",
            description: "",
            parts: this.options.outputParts ? this.options.outputParts(parts[0]) : [dataPart(data)],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
      await pause(2);
      if (cancelled) return;
      const finalMetadata = this.options.finalMetadata;
      this.status(ctx, bus, TaskState.TASK_STATE_COMPLETED, finalMetadata ? "done" : undefined, finalMetadata);
    } finally {
      this.cancels.delete(ctx.taskId);
      if (!cancelled) bus.finished();
    }
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    this.cancels.get(taskId)?.();
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: "",
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
    bus.finished();
  };

  cancelAll(): void {
    for (const cancel of this.cancels.values()) cancel();
  }

  private status(ctx: RequestContext, bus: ExecutionEventBus, state: TaskState, text?: string, metadata?: Record<string, unknown>): void {
    const message: Message | undefined =
      text === undefined
        ? undefined
        : {
            messageId: randomUUID(),
            contextId: ctx.contextId,
            taskId: ctx.taskId,
            role: Role.ROLE_AGENT,
            parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" }],
            metadata,
            extensions: [],
            referenceTaskIds: [],
          };
    bus.publish(
      AgentEvent.statusUpdate({
        taskId: ctx.taskId,
        contextId: ctx.contextId,
        status: { state, message, timestamp: new Date().toISOString() },
        metadata,
      }),
    );
  }
}

function partValue(part: Part): unknown {
  const c = part.content;
  if (c === undefined) return undefined;
  if (c.$case === "raw") return { bytes: c.value.length };
  return c.value;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

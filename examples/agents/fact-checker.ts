/**
 * An example FOREIGN agent: a fact-checker speaking A2A v1.0 (JSON-RPC), built with `@a2a-js/sdk`'s server and its
 * express integration, listening on loopback. The demo starts one and registers it as `foreign:fact-checker`.
 *
 * It behaves as a real remote agent would towards Switchyard: it serves its Agent Card at
 * `/.well-known/agent-card.json` (skill `fact-check`, push notifications supported), answers `SendMessage` at once
 * with the task, then works on it and reports each state — submitted, working, the artifact, completed — as a push
 * to the URL Switchyard gave it, with the per-task token in `X-A2A-Notification-Token` (push-sender.ts: the SDK's
 * push sender without its console line, which would print the signed callback URL).
 * The artifact holds one data part: the `factCheck` verdict on the research it received.
 *
 * Express is a devDependency of this repository (`npm ci` installs it); import this module only where an agent is
 * wanted, so nothing else loads express.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { AgentCard, TaskState, type Part, type Task } from "@a2a-js/sdk";
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { factCheck } from "./fact-check.js";
import { QuietPushSender } from "./push-sender.js";

export const FACT_CHECK_SKILL = "fact-check";

export interface FactCheckerOptions {
  /** @defaultValue "127.0.0.1" */
  host?: string;
  /** 0 picks a free port. @defaultValue 0 */
  port?: number;
  /** The card's name, also recorded as `checkedBy`. @defaultValue "fact-checker" */
  name?: string;
  /** Pause before each event after the first, so the pushes arrive as separate updates (ms). @defaultValue 20 */
  stepDelayMs?: number;
  /** Told about each push that failed (not retried; the receiver's sweep polls for what it missed). */
  onPushError?: (error: unknown, taskId: string) => void;
}

export interface RunningFactChecker {
  /** Register this as the agent's base URL, e.g. `http://127.0.0.1:41234`. */
  readonly baseUrl: string;
  readonly cardUrl: string;
  /** How many tasks it has been sent. */
  tasksReceived(): number;
  /** Stops listening and abandons unfinished work; idempotent. */
  close(): Promise<void>;
}

export async function startFactChecker(options: FactCheckerOptions = {}): Promise<RunningFactChecker> {
  const name = options.name ?? "fact-checker";
  const host = options.host ?? "127.0.0.1";
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const shownHost = host.includes(":") ? `[${host}]` : host;
  const baseUrl = `http://${shownHost}:${(server.address() as AddressInfo).port}`;
  const rpcUrl = `${baseUrl}/a2a/jsonrpc`;

  const card = AgentCard.fromJSON({
    name,
    description: "Checks research findings against their topic and returns a verdict (a Switchyard example agent)",
    version: "1.0.0",
    supportedInterfaces: [{ url: rpcUrl, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" }],
    capabilities: { streaming: false, pushNotifications: true },
    defaultInputModes: ["application/json"],
    defaultOutputModes: ["application/json"],
    skills: [{ id: FACT_CHECK_SKILL, name: "Fact check", description: "Verdict on each finding of a piece of research", tags: ["example"] }],
  });
  const executor = new FactCheckExecutor(name, options.stepDelayMs ?? 20);
  const pushes = new InMemoryPushNotificationStore();
  const requestHandler = new DefaultRequestHandler(
    card,
    new InMemoryTaskStore(),
    executor,
    undefined,
    pushes,
    new QuietPushSender(pushes, { timeoutMs: 2_000, ...(options.onPushError ? { onError: options.onPushError } : {}) }),
  );
  const app = express();
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: async () => card }));
  app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  server.on("request", app);

  let closing: Promise<void> | undefined;
  return {
    baseUrl,
    cardUrl: `${baseUrl}/.well-known/agent-card.json`,
    tasksReceived: () => executor.received,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        executor.abandon();
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}

class FactCheckExecutor implements AgentExecutor {
  received = 0;
  private abandoned = false;
  private readonly cancelled = new Set<string>();

  constructor(
    private readonly name: string,
    private readonly delayMs: number,
  ) {}

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    this.received += 1;
    const user = ctx.userMessage;
    const task: Task = {
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [user],
      metadata: undefined,
    };
    bus.publish(AgentEvent.task(task));
    const stopped = () => this.abandoned || this.cancelled.has(ctx.taskId);
    try {
      await sleep(this.delayMs);
      if (stopped()) return;
      this.status(ctx, bus, TaskState.TASK_STATE_WORKING);
      const input = user.parts.map(partValue).find((value) => value !== undefined);
      const verdict = factCheck(input, this.name);
      await sleep(this.delayMs);
      if (stopped()) return;
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          artifact: { artifactId: "verdict", name: "verdict", description: "the fact-check verdict", parts: [dataPart(verdict)], metadata: undefined, extensions: [] },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
      await sleep(this.delayMs);
      if (stopped()) return;
      this.status(ctx, bus, TaskState.TASK_STATE_COMPLETED);
    } finally {
      if (!this.cancelled.delete(ctx.taskId)) bus.finished();
    }
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    this.cancelled.add(taskId);
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

  abandon(): void {
    this.abandoned = true;
  }

  private status(ctx: RequestContext, bus: ExecutionEventBus, state: TaskState): void {
    bus.publish(
      AgentEvent.statusUpdate({
        taskId: ctx.taskId,
        contextId: ctx.contextId,
        status: { state, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
  }
}

function dataPart(value: unknown): Part {
  return { content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "application/json" };
}

/** A data part's value, a text part's text; anything else is not input this agent reads. */
function partValue(part: Part): unknown {
  const content = part.content;
  if (content?.$case === "data" || content?.$case === "text") return content.value;
  return undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

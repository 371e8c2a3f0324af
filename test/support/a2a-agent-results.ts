/**
 * The ways a lab A2A agent (a2a-agents.ts) delivers results that test the spec's corners: answering SendMessage
 * with a finished Task or with a Message, sending an artifact in append chunks, and holding one push back so later
 * ones overtake it (the SDK does not await its push sender, so a held push really arrives last).
 */
import { randomUUID } from "node:crypto";
import { TaskState, Role, type Message, type Part } from "@a2a-js/sdk";
import { AgentEvent, type ExecutionEventBus, type PushNotificationSender } from "@a2a-js/sdk/server";

/** The bit of the executor's request context these need. */
export interface ResultContext {
  taskId: string;
  contextId: string;
  userMessage: Message;
}

/** `message-reply`: a Message carrying the output as its data part; no task is opened. */
export function replyWithMessage(ctx: ResultContext, bus: ExecutionEventBus, output: unknown): void {
  bus.publish(
    AgentEvent.message({
      messageId: randomUUID(),
      contextId: ctx.contextId,
      taskId: "",
      role: Role.ROLE_AGENT,
      parts: [dataPart(output)],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    }),
  );
  bus.finished();
}

/** `blocking-complete`: the first and only event is the Task, already completed with its artifact. */
export function completeBeforeAnswering(ctx: ResultContext, bus: ExecutionEventBus, output: unknown): void {
  bus.publish(
    AgentEvent.task({
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [{ artifactId: "result", name: "result", description: "", parts: [dataPart(output)], metadata: undefined, extensions: [] }],
      history: [ctx.userMessage],
      metadata: undefined,
    }),
  );
  bus.finished();
}

/**
 * `status-message-only`: the first and only event is the Task, completed, its answer only in `status.message`;
 * `empty-complete` (no output): completed with neither an artifact nor a status message.
 */
export function completeInStatusMessage(ctx: ResultContext, bus: ExecutionEventBus, output: unknown): void {
  const message: Message | undefined = output === undefined ? undefined : {
    messageId: randomUUID(),
    contextId: ctx.contextId,
    taskId: ctx.taskId,
    role: Role.ROLE_AGENT,
    parts: [{ content: { $case: "text", value: "done" }, metadata: undefined, filename: "", mediaType: "" } as Part, dataPart(output)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
  bus.publish(
    AgentEvent.task({
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: { state: TaskState.TASK_STATE_COMPLETED, message, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [ctx.userMessage],
      metadata: undefined,
    }),
  );
  bus.finished();
}

/** `chunked-out-of-order`: artifact `result` as three append chunks `{ chunk: 1..3 }`, lastChunk on the third. */
export async function publishChunks(ctx: ResultContext, bus: ExecutionEventBus): Promise<void> {
  for (const chunk of [1, 2, 3]) {
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId: ctx.taskId,
        contextId: ctx.contextId,
        artifact: { artifactId: "result", name: "result", description: "", parts: [dataPart({ chunk })], metadata: undefined, extensions: [] },
        append: chunk > 1,
        lastChunk: chunk === 3,
        metadata: undefined,
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Holds back one push per task by `holdMs`: every artifact push (`reordered`, so the final status overtakes it), or
 * the push of an appended chunk that is not the last (`chunks`, so the last chunk and the final status overtake it).
 */
export function holdingBack(inner: PushNotificationSender, hold: "reordered" | "chunks" | undefined, holdMs: number): PushNotificationSender {
  if (hold === undefined) return inner;
  return {
    async send(streamResponse, context, task) {
      const p = streamResponse.payload;
      const held = p?.$case === "artifactUpdate" && (hold === "reordered" || (p.value.append && !p.value.lastChunk));
      if (held) await new Promise((resolve) => setTimeout(resolve, holdMs));
      return inner.send(streamResponse, context, task);
    },
  };
}

export function dataPart(value: unknown): Part {
  return { content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "application/json" };
}

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
import express from "express";
import { AgentCard, TaskState } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryPushNotificationStore, InMemoryTaskStore, } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { factCheck } from "./fact-check.js";
import { QuietPushSender } from "./push-sender.js";
export const FACT_CHECK_SKILL = "fact-check";
export async function startFactChecker(options = {}) {
    const name = options.name ?? "fact-checker";
    const host = options.host ?? "127.0.0.1";
    const server = createServer();
    await new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(options.port ?? 0, host, () => {
            server.off("error", reject);
            resolve();
        });
    });
    const shownHost = host.includes(":") ? `[${host}]` : host;
    const baseUrl = `http://${shownHost}:${server.address().port}`;
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
    const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor, undefined, pushes, new QuietPushSender(pushes, { timeoutMs: 2_000, ...(options.onPushError ? { onError: options.onPushError } : {}) }));
    const app = express();
    app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: async () => card }));
    app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
    server.on("request", app);
    let closing;
    return {
        baseUrl,
        cardUrl: `${baseUrl}/.well-known/agent-card.json`,
        tasksReceived: () => executor.received,
        close: () => (closing ??= new Promise((resolve) => {
            executor.abandon();
            server.close(() => resolve());
            server.closeAllConnections();
        })),
    };
}
class FactCheckExecutor {
    name;
    delayMs;
    received = 0;
    abandoned = false;
    cancelled = new Set();
    constructor(name, delayMs) {
        this.name = name;
        this.delayMs = delayMs;
    }
    execute = async (ctx, bus) => {
        this.received += 1;
        const user = ctx.userMessage;
        const task = {
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
            if (stopped())
                return;
            this.status(ctx, bus, TaskState.TASK_STATE_WORKING);
            const input = user.parts.map(partValue).find((value) => value !== undefined);
            const verdict = factCheck(input, this.name);
            await sleep(this.delayMs);
            if (stopped())
                return;
            bus.publish(AgentEvent.artifactUpdate({
                taskId: ctx.taskId,
                contextId: ctx.contextId,
                artifact: { artifactId: "verdict", name: "verdict", description: "the fact-check verdict", parts: [dataPart(verdict)], metadata: undefined, extensions: [] },
                append: false,
                lastChunk: true,
                metadata: undefined,
            }));
            await sleep(this.delayMs);
            if (stopped())
                return;
            this.status(ctx, bus, TaskState.TASK_STATE_COMPLETED);
        }
        finally {
            if (!this.cancelled.delete(ctx.taskId))
                bus.finished();
        }
    };
    cancelTask = async (taskId, bus) => {
        this.cancelled.add(taskId);
        bus.publish(AgentEvent.statusUpdate({
            taskId,
            contextId: "",
            status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
            metadata: undefined,
        }));
        bus.finished();
    };
    abandon() {
        this.abandoned = true;
    }
    status(ctx, bus, state) {
        bus.publish(AgentEvent.statusUpdate({
            taskId: ctx.taskId,
            contextId: ctx.contextId,
            status: { state, message: undefined, timestamp: new Date().toISOString() },
            metadata: undefined,
        }));
    }
}
function dataPart(value) {
    return { content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "application/json" };
}
/** A data part's value, a text part's text; anything else is not input this agent reads. */
function partValue(part) {
    const content = part.content;
    if (content?.$case === "data" || content?.$case === "text")
        return content.value;
    return undefined;
}
function sleep(ms) {
    return new Promise((resolve) => setTimeout(resolve, ms));
}
//# sourceMappingURL=fact-checker.js.map
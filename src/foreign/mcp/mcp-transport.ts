/**
 * The MCP adapter of the ForeignTransport port (../transport.ts): a foreign hop is ONE `tools/call` of the tool the
 * registry names, over Streamable HTTP through the agent's guarded fetch (mcp-client.ts).
 *
 * The call IS the work and its answer is the result, so:
 * - `send` connects (initialize: no work yet, so a failure there is `not-sent` and the step may re-send), then records
 *   the call as started (`request.started`, the bridge leaves `pending_send`) BEFORE calling: a sender that crashes
 *   mid-call never calls again — the step's timeout decides, and decide.ts re-sends only to an idempotent agent.
 *   The call answers as an SSE stream read as it arrives (the channel's `fetchFor`), so the call may go quiet for at
 *   most `totalTimeoutMs`: each progress notification resets that. Its hard bound is the step attempt's due time
 *   plus `DEADLINE_GRACE_MS`, and each progress notification moves it to now + the step's timeout + the grace while
 *   the sender (`request.progress`) heartbeats the step, whose due time the coordinator moves the same way. So a tool
 *   that keeps reporting progress runs as long as it needs; one that stops (or never reports) meets the step's own
 *   timeout at the last due time (TIMEOUT), and the call is abandoned just after, its late failure finding the
 *   attempt already over.
 * - the answer maps to a terminal observation (tool-result.ts) that resolves the bridge at once; delivery `call`.
 * - `poll` has nothing to ask (no task id to look up): undefined. `cancel` sends nothing: MCP's
 *   `notifications/cancelled` only concerns an in-flight request of the same session, and that request is aborted
 *   by its own signal/timeout at the deadline (the SDK then sends `notifications/cancelled` itself).
 *
 * Arguments: the bridge's request when it is a JSON object; anything else (a string, a number, a list) is wrapped as
 * `{ value: <request> }`, since MCP tool arguments are always an object.
 */
import { ErrorCode, SwitchyardError } from "../../errors.js";
import type { AgentChannels } from "../agent-channels.js";
import type { BridgeRecord } from "../../store/bridges/bridge-store.js";
import type { ForeignObservation } from "../bridge-transition.js";
import type { ForeignConfig } from "../../config/index.js";
import type { ForeignAgentRecord } from "../registry.js";
import type { AgentDescription, ForeignTransport, TransportSendRequest, TransportSendResult } from "../transport.js";
import { connectMcp, failure, mcpError } from "./mcp-client.js";
import { observationOf } from "./tool-result.js";

/** How long past the step's due time a call is still awaited, so the step's timeout, not the call's, decides. */
export const DEADLINE_GRACE_MS = 1_000;

export interface McpTransportOptions {
  /** connectTimeoutMs / totalTimeoutMs bound initialize and tools/list. */
  foreign: Pick<ForeignConfig, "totalTimeoutMs">;
  clock?: () => number;
}

export class McpTransport implements ForeignTransport {
  readonly kind = "mcp" as const;
  private readonly clock: () => number;

  constructor(
    private readonly channels: AgentChannels,
    private readonly options: McpTransportOptions,
  ) {
    this.clock = options.clock ?? Date.now;
  }

  async describe(agent: ForeignAgentRecord, signal?: AbortSignal): Promise<AgentDescription> {
    const tool = toolOf(agent);
    const timeoutMs = this.options.foreign.totalTimeoutMs;
    const session = await connectMcp({ url: agent.baseUrl, fetch: this.channels.get(agent).fetch, timeoutMs, ...(signal ? { signal } : {}) });
    try {
      const tools = await session.listTools({ timeoutMs, ...(signal ? { signal } : {}) });
      if (!tools.some((t) => t.name === tool)) {
        const listed = tools.map((t) => t.name).slice(0, 20);
        throw failure("MCP_TOOL_MISSING", ErrorCode.FailedPrecondition, `MCP server at ${agent.baseUrl} does not list tool ${JSON.stringify(tool)} (it lists: ${listed.join(", ") || "none"})`, false, {
          tool,
          listed,
        });
      }
      return { summary: `${session.serverName || agent.agentKey} (MCP) tool ${tool}`, delivery: "call", notes: [] };
    } finally {
      await session.close();
    }
  }

  async send(request: TransportSendRequest): Promise<TransportSendResult> {
    const { agent, bridge } = request;
    const tool = toolOf(agent);
    const foreignTaskId = `mcp:${bridge.id}`;
    const timeLeft = () => request.deadlineMs - this.clock();
    if (timeLeft() <= 0) throw failure("MCP_TIMEOUT", ErrorCode.Timeout, `the step attempt is past its due time; tool ${tool} is not called`, false);
    const channel = this.channels.get(agent);
    // The call's hard bound: the step's due time plus the grace, moved on by each progress notification.
    const bound = new CallBound(request.deadlineMs + DEADLINE_GRACE_MS, this.clock);
    // One guarded fetch for the whole session, its total deadline the same bound: the call's answer comes when the
    // tool is done.
    const fetch = channel.fetchFor(bound.leftMs(), () => bound.untilMs);
    const initTimeout = Math.min(this.options.foreign.totalTimeoutMs, timeLeft());
    // Initialize does no work at the server: failing here leaves reach.mayHaveReached false (not-sent).
    const session = await connectMcp({ url: agent.baseUrl, fetch, timeoutMs: initTimeout, ...(request.signal ? { signal: request.signal } : {}) });
    try {
      await request.started(foreignTaskId);
      request.reach.mayHaveReached = true;
      const quiet = Math.max(1, Math.min(this.options.foreign.totalTimeoutMs, bound.leftMs()));
      const what = `tools/call ${tool}`;
      const limit = bound.start(request.signal, () =>
        failure("MCP_TIMEOUT", ErrorCode.Timeout, `MCP ${what} at ${agent.baseUrl}: no answer by the step attempt's due time (+${DEADLINE_GRACE_MS} ms)`, true, {
          what,
          endpoint: agent.baseUrl,
        }),
      );
      try {
        const result = await session.client
          .callTool({ name: tool, arguments: argumentsOf(bridge.request) }, undefined, {
            timeout: quiet,
            resetTimeoutOnProgress: true,
            onprogress: () => {
              // As the coordinator does on the heartbeat this causes: the step may now run a whole timeout more.
              if (request.stepTimeoutMs !== undefined) bound.extendTo(this.clock() + request.stepTimeoutMs + DEADLINE_GRACE_MS);
              request.progress?.();
            },
            signal: limit,
          })
          .catch((error: unknown) => {
            // The SDK wraps an abort's reason as a RequestTimeout McpError: our bound's own error says what passed.
            if (limit.aborted && !request.signal?.aborted) throw limit.reason;
            throw mcpError(error, { what, url: agent.baseUrl, timeoutMs: quiet, signal: request.signal });
          });
        return { foreignTaskId, dialect: "mcp", delivery: "call", observation: observationOf(foreignTaskId, result) };
      } finally {
        bound.stop();
      }
    } finally {
      await session.close();
    }
  }

  async poll(): Promise<ForeignObservation | undefined> {
    return undefined;
  }

  async cancel(): Promise<boolean> {
    return false;
  }
}

function toolOf(agent: ForeignAgentRecord): string {
  if (!agent.tool) {
    throw new SwitchyardError(ErrorCode.FailedPrecondition, `MCP agent ${agent.agentKey} has no tool registered`, { details: { reason: "MCP_TOOL_MISSING" } });
  }
  return agent.tool;
}

/** MCP tool arguments are an object: a JSON object as is, anything else as `{ value }`. */
export function argumentsOf(request: unknown): Record<string, unknown> {
  if (request !== null && typeof request === "object" && !Array.isArray(request)) return request as Record<string, unknown>;
  return { value: request };
}

/**
 * A call's hard bound that may move later (never earlier): `start` answers a signal that aborts with `reason()` once
 * the bound passes, or with the caller's own signal. The timer is re-armed when it fires early because the bound
 * moved, so a progress notification costs an assignment, not a timer.
 */
class CallBound {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private unlisten: (() => void) | undefined;

  constructor(
    public untilMs: number,
    private readonly clock: () => number,
  ) {}

  leftMs(): number {
    return this.untilMs - this.clock();
  }

  extendTo(untilMs: number): void {
    this.untilMs = Math.max(this.untilMs, untilMs);
  }

  start(caller: AbortSignal | undefined, reason: () => Error): AbortSignal {
    const controller = new AbortController();
    const arm = (): void => {
      this.timer = setTimeout(() => (this.leftMs() > 0 ? arm() : controller.abort(reason())), Math.max(1, this.leftMs()));
    };
    arm();
    if (caller) {
      const onAbort = () => controller.abort(caller.reason);
      if (caller.aborted) onAbort();
      else caller.addEventListener("abort", onAbort, { once: true });
      this.unlisten = () => caller.removeEventListener("abort", onAbort);
    }
    return controller.signal;
  }

  stop(): void {
    clearTimeout(this.timer);
    this.unlisten?.();
  }
}

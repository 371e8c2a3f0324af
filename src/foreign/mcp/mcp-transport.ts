/**
 * The MCP adapter of the ForeignTransport port (../transport.ts): a foreign hop is ONE `tools/call` of the tool the
 * registry names, over Streamable HTTP through the agent's guarded fetch (mcp-client.ts).
 *
 * The call IS the work and its answer is the result, so:
 * - `send` connects (initialize: no work yet, so a failure there is `not-sent` and the step may re-send), then records
 *   the call as started (`request.started`, the bridge leaves `pending_send`) BEFORE calling: a sender that crashes
 *   mid-call never calls again — the step's timeout decides, and decide.ts re-sends only to an idempotent agent.
 *   The call answers as an SSE stream read as it arrives (the channel's `fetchFor`), so the call may go quiet for at
 *   most `totalTimeoutMs`: each progress notification resets that (and tells the sender the call is alive,
 *   `request.progress`), and nothing outlives the step attempt's due time by more than `DEADLINE_GRACE_MS`
 *   (`maxTotalTimeout`): the step's own timeout decides at its due time (TIMEOUT), and the call is abandoned just
 *   after, its late failure finding the attempt already over.
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
import type { BridgeRecord } from "../bridge-store.js";
import type { ForeignObservation } from "../bridge-transition.js";
import type { ForeignConfig } from "../../config.js";
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
    // One guarded fetch for the whole session, its total deadline the step's: the call's answer comes when the tool is done.
    const fetch = channel.fetchFor(timeLeft() + DEADLINE_GRACE_MS);
    const initTimeout = Math.min(this.options.foreign.totalTimeoutMs, timeLeft());
    // Initialize does no work at the server: failing here leaves reach.mayHaveReached false (not-sent).
    const session = await connectMcp({ url: agent.baseUrl, fetch, timeoutMs: initTimeout, ...(request.signal ? { signal: request.signal } : {}) });
    try {
      await request.started(foreignTaskId);
      request.reach.mayHaveReached = true;
      const total = Math.max(1, timeLeft() + DEADLINE_GRACE_MS);
      const quiet = Math.min(this.options.foreign.totalTimeoutMs, total);
      const result = await session.client
        .callTool({ name: tool, arguments: argumentsOf(bridge.request) }, undefined, {
          timeout: quiet,
          maxTotalTimeout: total,
          resetTimeoutOnProgress: true,
          onprogress: () => request.progress?.(),
          ...(request.signal ? { signal: request.signal } : {}),
        })
        .catch((error: unknown) => {
          throw mcpError(error, { what: `tools/call ${tool}`, url: agent.baseUrl, timeoutMs: quiet, signal: request.signal });
        });
      return { foreignTaskId, dialect: "mcp", delivery: "call", observation: observationOf(foreignTaskId, result) };
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

/**
 * One MCP session with a foreign server over Streamable HTTP, for one describe or one tool call: connect
 * (initialize), use, close. Every request — the POSTs, the optional GET stream, the DELETE on close — goes through
 * the agent's guarded fetch (its channel), so the egress guard sees all of them. Short-lived on purpose: a session
 * per hop keeps nothing open between hops and nothing to resume after a crash (a call is never resumed anyway).
 *
 * Only Streamable HTTP is spoken; the legacy HTTP+SSE transport (protocol 2024-11-05) is not supported.
 *
 * Errors become SwitchyardErrors whose `details.reason` starts with `MCP_` (send-reach.ts treats them like A2A's):
 * `MCP_NETWORK` when the request did not get an answer (its cause, the guard's error, says whether anything left),
 * `MCP_HTTP_STATUS`, `MCP_TIMEOUT`, `MCP_RPC_ERROR`, `MCP_TOOL_MISSING`. `details.retryable` says whether another try
 * may help (network trouble and 5xx only).
 *
 * `@modelcontextprotocol/sdk` is an optional dependency (a worker's install leaves it out, README "Installing for a
 * worker"): loaded by the first connect and kept; without it, connecting is an UNAVAILABLE error naming it.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { loadOptionalPackage } from "../../process/optional-package.js";

export type McpFailure = "MCP_NETWORK" | "MCP_HTTP_STATUS" | "MCP_TIMEOUT" | "MCP_RPC_ERROR" | "MCP_TOOL_MISSING" | "MCP_CANCELLED";

export interface McpConnectOptions {
  /** The server's MCP endpoint (the registry's base URL), e.g. `https://tools.example.com/mcp`. */
  url: string;
  /** The agent's guarded fetch. */
  fetch: typeof globalThis.fetch;
  /** Time allowed for initialize (ms). */
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface McpSession {
  client: Client;
  /** The server's self-reported name (initialize), or undefined. */
  serverName: string | undefined;
  /** Every tool the server lists, all pages followed. */
  listTools(options: { timeoutMs: number; signal?: AbortSignal }): Promise<Tool[]>;
  close(): Promise<void>;
}

const CLIENT_INFO = { name: "switchyard", version: "1" };
/** Pages of tools/list followed at most: a server that pages without end must not hold a registration forever. */
const MAX_TOOL_PAGES = 50;

interface McpSdk {
  Client: typeof import("@modelcontextprotocol/sdk/client/index.js").Client;
  StreamableHTTPClientTransport: typeof import("@modelcontextprotocol/sdk/client/streamableHttp.js").StreamableHTTPClientTransport;
  StreamableHTTPError: typeof import("@modelcontextprotocol/sdk/client/streamableHttp.js").StreamableHTTPError;
  McpError: typeof import("@modelcontextprotocol/sdk/types.js").McpError;
  McpErrorCode: typeof import("@modelcontextprotocol/sdk/types.js").ErrorCode;
}

/** Set once the SDK is loaded; an MCP error can only come from a session, so mcpError finds it set. */
let sdk: McpSdk | undefined;

async function loadSdk(): Promise<McpSdk> {
  const [client, http, types] = await loadOptionalPackage(
    "@modelcontextprotocol/sdk",
    () => Promise.all([import("@modelcontextprotocol/sdk/client/index.js"), import("@modelcontextprotocol/sdk/client/streamableHttp.js"), import("@modelcontextprotocol/sdk/types.js")]),
    { needs: "MCP foreign agents need", retryable: false },
  );
  return (sdk = {
    Client: client.Client,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    StreamableHTTPError: http.StreamableHTTPError,
    McpError: types.McpError,
    McpErrorCode: types.ErrorCode,
  });
}

export async function connectMcp(options: McpConnectOptions): Promise<McpSession> {
  const { Client, StreamableHTTPClientTransport } = sdk ?? (await loadSdk());
  const transport = new StreamableHTTPClientTransport(new URL(options.url), {
    fetch: options.fetch,
    // No reconnection of the optional GET stream: a session lives for one call.
    reconnectionOptions: { maxReconnectionDelay: 1_000, initialReconnectionDelay: 1_000, reconnectionDelayGrowFactor: 1, maxRetries: 0 },
  });
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  // Transport hiccups after the answer we need (e.g. the optional GET stream ending) are not our call's failure.
  client.onerror = () => undefined;
  try {
    await client.connect(transport, { timeout: options.timeoutMs, ...(options.signal ? { signal: options.signal } : {}) });
  } catch (error) {
    await client.close().catch(() => undefined);
    throw mcpError(error, { what: "initialize", url: options.url, timeoutMs: options.timeoutMs, signal: options.signal });
  }
  return {
    client,
    serverName: client.getServerVersion()?.name,
    async listTools({ timeoutMs, signal }) {
      const tools: Tool[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_TOOL_PAGES; page++) {
        const answer = await client
          .listTools(cursor === undefined ? {} : { cursor }, { timeout: timeoutMs, ...(signal ? { signal } : {}) })
          .catch((error: unknown) => {
            throw mcpError(error, { what: "tools/list", url: options.url, timeoutMs, signal });
          });
        tools.push(...answer.tools);
        cursor = answer.nextCursor;
        if (!cursor) break;
      }
      return tools;
    },
    async close() {
      // terminateSession asks a stateful server to drop the session (DELETE); a stateless one answers 405.
      await transport.terminateSession().catch(() => undefined);
      await client.close().catch(() => undefined);
    },
  };
}

export interface McpErrorContext {
  what: string;
  url: string;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

/** Whatever an MCP request threw, as a SwitchyardError with an `MCP_` reason (see the module comment). */
export function mcpError(error: unknown, ctx: McpErrorContext): SwitchyardError {
  const where = { what: ctx.what, endpoint: ctx.url };
  if (error instanceof SwitchyardError && typeof error.details.reason === "string" && error.details.reason.startsWith("MCP_")) return error;
  if (ctx.signal?.aborted) return failure("MCP_CANCELLED", ErrorCode.Cancelled, `MCP ${ctx.what} at ${ctx.url} cancelled`, false, where, error);
  const egress = guardError(error);
  if (egress) {
    const transient = egress.details.transient === true || egress.details.retryable === true;
    return failure("MCP_NETWORK", egress.code, `MCP ${ctx.what} at ${ctx.url}: ${egress.message}`, transient, where, egress);
  }
  if (sdk && error instanceof sdk.StreamableHTTPError) {
    const status = error.code ?? 0;
    return failure("MCP_HTTP_STATUS", status >= 500 ? ErrorCode.Unavailable : ErrorCode.FailedPrecondition, `MCP ${ctx.what} at ${ctx.url}: HTTP ${status}: ${clip(error.message)}`, status >= 500, { ...where, status }, error);
  }
  if (sdk && error instanceof sdk.McpError) {
    const McpErrorCode = sdk.McpErrorCode;
    if (error.code === McpErrorCode.RequestTimeout) return failure("MCP_TIMEOUT", ErrorCode.Timeout, `MCP ${ctx.what} at ${ctx.url} got no answer within ${ctx.timeoutMs} ms`, true, where, error);
    if (error.code === McpErrorCode.ConnectionClosed) return failure("MCP_NETWORK", ErrorCode.Unavailable, `MCP ${ctx.what} at ${ctx.url}: connection closed`, true, where, error);
    return failure("MCP_RPC_ERROR", ErrorCode.FailedPrecondition, `MCP ${ctx.what} at ${ctx.url} failed: JSON-RPC error ${error.code}: ${clip(error.message)}`, false, { ...where, rpcCode: error.code }, error);
  }
  return failure("MCP_NETWORK", ErrorCode.Unavailable, `MCP ${ctx.what} at ${ctx.url} failed: ${clip((error as Error)?.message ?? String(error))}`, false, where, error);
}

/** The guard's own error (egress refused, connection failed, deadline), wherever the SDK wrapped it. */
function guardError(error: unknown): SwitchyardError | undefined {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof SwitchyardError) return e;
  }
  return undefined;
}

export function failure(reason: McpFailure, code: ErrorCode, message: string, retryable: boolean, extra: Record<string, unknown> = {}, cause?: unknown): SwitchyardError {
  return new SwitchyardError(code, message, { cause, details: { reason, retryable, ...extra } });
}

function clip(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

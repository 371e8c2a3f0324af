/**
 * A real MCP server for tests, built with `@modelcontextprotocol/sdk`'s McpServer and StreamableHTTPServerTransport
 * (stateless: a server and transport per POST, answers as SSE streams) on 127.0.0.1, port 0, endpoint `/mcp`.
 *
 * Tools:
 * - `echo`: answers `{ echo: <arguments> }` as structuredContent (and as text), with `_meta.usage` when `usage` is set.
 * - `fails`: `isError: true` with a text message.
 * - `slow`: sleeps `ms` (argument `ms` or `task.ms` — a workflow step's input is `{ task, steps }` — default `slowMs`), sending a progress notification every `progressEveryMs` when
 *   the client asked for progress (unless `progress: false`; only during the first `progressForMs` if set); answers text `slept <ms>`.
 * - `deep`: answers structuredContent nested `depth` levels (argument `depth` or `task.depth`, default 500).
 * - `count`: counts its calls (per `key` argument), sleeping `ms` first; answers the count as text.
 *
 * `calls` records every tool call (name and arguments) as it starts.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

export interface StartMcpServerOptions {
  /** The server's name in initialize. Default "test-tools". */
  name?: string;
  /** Default sleep of `slow` (ms). Default 300. */
  slowMs?: number;
  /** Interval of `slow`'s progress notifications (ms). Default 100. */
  progressEveryMs?: number;
  /** Whether `slow` sends progress notifications at all. Default true. */
  progress?: boolean;
  /** `slow` sends progress only during its first this many ms, then sleeps on silently. Default: all along. */
  progressForMs?: number;
  /** `_meta` of `echo`'s result. */
  echoMeta?: Record<string, unknown>;
}

export interface RunningMcpServer {
  /** The MCP endpoint, e.g. http://127.0.0.1:PORT/mcp */
  url: string;
  port: number;
  calls: Array<{ tool: string; args: Record<string, unknown> }>;
  /** How many times a tool was called. */
  callsOf(tool: string): number;
  /** Calls of `count` that finished (answered). */
  finished: number;
  /** Calls of `slow` running now, and those that ended because the client went away (the request was aborted). */
  slowRunning: number;
  slowAborted: number;
  close(): Promise<void>;
}

/** `ms` from the arguments or from a workflow step's `{ task: { ms } }`. */
function msOf(args: Record<string, unknown>): number | undefined {
  const task = args.task as { ms?: unknown } | undefined;
  const ms = typeof args.ms === "number" ? args.ms : typeof task?.ms === "number" ? task.ms : undefined;
  return ms;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    // The listener goes with the sleep: `slow` sleeps many times on one request's signal.
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });

export async function startMcpServer(options: StartMcpServerOptions = {}): Promise<RunningMcpServer> {
  const calls: RunningMcpServer["calls"] = [];
  const state = { finished: 0, slowRunning: 0, slowAborted: 0 };

  const build = () => {
    const mcp = new McpServer({ name: options.name ?? "test-tools", version: "1.0.0" });
    mcp.registerTool("echo", { description: "echoes its arguments", inputSchema: z.looseObject({}) }, async (args) => {
      calls.push({ tool: "echo", args });
      return {
        content: [{ type: "text", text: JSON.stringify({ echo: args }) }],
        structuredContent: { echo: args },
        ...(options.echoMeta ? { _meta: options.echoMeta } : {}),
      };
    });
    mcp.registerTool("fails", { description: "always reports a tool error", inputSchema: z.looseObject({}) }, async (args) => {
      calls.push({ tool: "fails", args });
      return { isError: true, content: [{ type: "text", text: "the test tool was told to fail" }] };
    });
    mcp.registerTool("slow", { description: "sleeps, reporting progress", inputSchema: z.looseObject({}) }, async (args, extra) => {
      calls.push({ tool: "slow", args });
      const ms = msOf(args) ?? options.slowMs ?? 300;
      const every = options.progressEveryMs ?? 100;
      const token = extra._meta?.progressToken;
      const started = Date.now();
      state.slowRunning++;
      try {
        while (Date.now() - started < ms && !extra.signal.aborted) {
          await sleep(Math.min(every, ms - (Date.now() - started)), extra.signal);
          const reporting = options.progress !== false && Date.now() - started < (options.progressForMs ?? Number.POSITIVE_INFINITY);
          if (token !== undefined && reporting && !extra.signal.aborted) {
            await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: Date.now() - started, total: ms } }).catch(() => undefined);
          }
        }
      } finally {
        state.slowRunning--;
        if (extra.signal.aborted) state.slowAborted++;
      }
      return { content: [{ type: "text", text: `slept ${ms}` }] };
    });
    mcp.registerTool("deep", { description: "answers deeply nested JSON", inputSchema: z.looseObject({}) }, async (args) => {
      calls.push({ tool: "deep", args });
      const task = args.task as { depth?: unknown } | undefined;
      const depth = typeof args.depth === "number" ? args.depth : typeof task?.depth === "number" ? task.depth : 500;
      let nested: Record<string, unknown> = { leaf: true };
      for (let i = 0; i < depth; i++) nested = { d: nested };
      return { content: [{ type: "text", text: "deep" }], structuredContent: nested };
    });
    mcp.registerTool("count", { description: "counts its calls", inputSchema: z.looseObject({}) }, async (args, extra) => {
      calls.push({ tool: "count", args });
      const n = calls.filter((c) => c.tool === "count").length;
      const ms = msOf(args);
      if (ms) await sleep(ms, extra.signal);
      state.finished++;
      return { content: [{ type: "text", text: String(n) }] };
    });
    return mcp;
  };

  const http: Server = createServer((req, res) => {
    if (req.url !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    if (req.method !== "POST") {
      // Stateless: no standalone GET stream, no session to DELETE.
      res.writeHead(405, { allow: "POST" }).end();
      return;
    }
    const mcp = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void mcp.close();
    });
    void mcp
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    calls,
    callsOf: (tool) => calls.filter((c) => c.tool === tool).length,
    get finished() {
      return state.finished;
    },
    get slowRunning() {
      return state.slowRunning;
    },
    get slowAborted() {
      return state.slowAborted;
    },
    async close() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

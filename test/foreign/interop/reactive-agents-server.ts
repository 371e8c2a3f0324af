/**
 * An A2A agent built on `@reactive-agents/a2a` (Effect-based, independent of `@a2a-js/sdk`: its own schemas, task
 * store and JSON-RPC router), for interop tests.
 *
 * The package's HTTP host is Bun-only (`A2AHttpServer.start` calls `Bun.serve`), so on Node its JSON-RPC handler
 * (`A2AHttpServer.handleJsonRpc`, from `createA2AHttpServer`) is hosted here on `node:http` with exactly the routes
 * and bodies of that Bun host: `GET /.well-known/agent.json` (and `/agent/card`) → the card; `POST` any path → the
 * handler's answer as is, or `{ jsonrpc, id, error: { code: -32000, message, data: { a2aCode } } }` on failure, or a
 * 400 parse error. Nothing is adapted to what Switchyard expects: the interop test sees the package as it is.
 *
 * Its task handler reads only the text parts of a message (joined by newlines), runs the executor and answers
 * `message/send` with the finished task (artifact `response`, one text part). It never pushes.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Effect, Layer } from "effect";
import { A2AHttpServer, createA2AHttpServer, createA2AServer, generateAgentCard } from "@reactive-agents/a2a";

export interface ReactiveAgent {
  baseUrl: string;
  rpcUrl: string;
  /** What the executor was given (the text parts joined), in order. */
  inputs: string[];
  /** Every JSON-RPC method called, in order. */
  calls: string[];
  close(): Promise<void>;
}

export interface ReactiveAgentOptions {
  name?: string;
  skills?: string[];
  answer?: (input: string) => string;
  /**
   * Put the request's `id` on successful answers. `@reactive-agents/a2a` 0.9.0 answers every successful call with
   * `"id": null` (JSON-RPC 2.0 requires the request's id), which the `@a2a-js/sdk` client — ours — refuses. With
   * this on, the host fixes that one field and nothing else, to show the rest of the exchange. @defaultValue false
   */
  echoRequestId?: boolean;
}

export async function startReactiveAgent(options: ReactiveAgentOptions = {}): Promise<ReactiveAgent> {
  const inputs: string[] = [];
  const calls: string[] = [];
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const rpcUrl = `${baseUrl}/a2a`;
  const card = generateAgentCard({
    name: options.name ?? "reactive-echo",
    description: "an @reactive-agents/a2a test agent",
    url: rpcUrl,
    skills: (options.skills ?? ["echo"]).map((id) => ({ id, name: id, description: `skill ${id}`, tags: [] })),
    capabilities: { streaming: false, pushNotifications: false },
  });
  const answer = options.answer ?? ((input: string) => `echo: ${input}`);
  const layer = createA2AHttpServer(0, (input) =>
    Effect.sync(() => {
      inputs.push(input);
      return answer(input);
    }),
  ).pipe(Layer.provide(createA2AServer(card)));
  const rpc = await Effect.runPromise(Effect.provide(A2AHttpServer, layer));

  server.on("request", (req, res) => {
    const url = new URL(req.url ?? "/", baseUrl);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.method === "GET" && (url.pathname === "/.well-known/agent.json" || url.pathname === "/agent/card")) return json(200, card);
    if (req.method !== "POST") {
      res.writeHead(404).end("Not Found");
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let body: { id?: unknown; method?: string };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { id?: unknown; method?: string };
      } catch {
        return json(400, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
      }
      calls.push(String(body.method));
      void Effect.runPromise(
        rpc.handleJsonRpc(body as never).pipe(
          Effect.catchAll((error) => Effect.succeed({ jsonrpc: "2.0", id: body.id, error: { code: -32000, message: error.message, data: { a2aCode: error.code } } })),
        ),
      ).then(
        (result) => json(200, options.echoRequestId && isObject(result) && result.id === null && "result" in result ? { ...result, id: body.id } : result),
        () => json(400, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }),
      );
    });
  });

  return {
    baseUrl,
    rpcUrl,
    inputs,
    calls,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

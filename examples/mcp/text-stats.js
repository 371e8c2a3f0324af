/**
 * An example MCP server, standing for a tool outside the perimeter: one tool, `text_stats`, over Streamable HTTP
 * (stateless: a server and transport per POST) built with `@modelcontextprotocol/sdk`. `npm run demo -- mcp` starts
 * it on 127.0.0.1 and reaches it through the governed FOREIGN path (registry, egress guard, audit).
 *
 * `text_stats` counts the words and sentences of a text — the `text` argument, or the `draft` of a workflow step's
 * input (`{ task, steps: { <id>: { draft } } }`) — and answers them as structured content, with what it "used" in
 * `_meta.usage` (as a metered tool would report it).
 */
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
export const TEXT_STATS_TOOL = "text_stats";
export function textStats(text) {
    const words = text.split(/\s+/).map((w) => w.replace(/[^\p{L}\p{N}'-]/gu, "")).filter(Boolean);
    const sentences = text.split(/[.!?]+|\n+/).filter((s) => s.trim() !== "").length;
    const longestWord = words.reduce((a, b) => (b.length > a.length ? b : a), "");
    return { words: words.length, sentences, longestWord, readingSeconds: Math.ceil((words.length / 200) * 60) };
}
/** The text to measure: `text`, else the first `draft` among the step's needed outputs. */
function textOf(args) {
    if (typeof args.text === "string")
        return args.text;
    const steps = args.steps;
    if (steps !== null && typeof steps === "object") {
        for (const output of Object.values(steps)) {
            const draft = output?.draft;
            if (typeof draft === "string")
                return draft;
        }
    }
    return "";
}
export async function startTextStats(options = {}) {
    const received = [];
    const build = () => {
        const server = new McpServer({ name: "text-stats", version: "1.0.0" });
        server.registerTool(TEXT_STATS_TOOL, { description: "Counts the words and sentences of a text (argument `text`, or a workflow step's draft)", inputSchema: z.looseObject({ text: z.string().optional() }) }, async (args) => {
            const text = textOf(args);
            received.push(text);
            const stats = textStats(text);
            return {
                content: [{ type: "text", text: JSON.stringify(stats) }],
                structuredContent: { ...stats },
                _meta: { usage: { inputTokens: stats.words, outputTokens: 4 } },
            };
        });
        return server;
    };
    const http = createServer((req, res) => {
        if (req.url !== "/mcp")
            return void res.writeHead(404).end();
        if (req.method !== "POST")
            return void res.writeHead(405, { allow: "POST" }).end();
        const server = build();
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        res.on("close", () => {
            void transport.close();
            void server.close();
        });
        void server
            .connect(transport)
            .then(() => transport.handleRequest(req, res))
            .catch(() => {
            if (!res.headersSent)
                res.writeHead(500).end();
        });
    });
    await new Promise((resolve) => http.listen(options.port ?? 0, options.host ?? "127.0.0.1", resolve));
    const { address, port } = http.address();
    return {
        url: `http://${address}:${port}/mcp`,
        received,
        async close() {
            http.closeAllConnections();
            await new Promise((resolve) => http.close(() => resolve()));
        },
    };
}
//# sourceMappingURL=text-stats.js.map
/**
 * The egress guard's streamed answers (`streamEventStreams`, used for MCP tool calls): a 2xx `text/event-stream` body
 * is handed on as it arrives, while the size cap and the total deadline still hold over the whole body; any other
 * answer is read whole as before.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createGuardedFetch } from "../../../src/foreign/egress/guarded-fetch.js";
import { startServer, type TestServer } from "./servers.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

/** An SSE answer: one event now, one after `gapMs`, then the end. */
async function sseServer(gapMs: number, second = "data: two\n\n"): Promise<TestServer> {
  const s = await startServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write("data: one\n\n");
    setTimeout(() => res.end(second), gapMs);
  });
  cleanups.push(() => s.close());
  return s;
}

function guard(port: number, options: { totalTimeoutMs?: number; maxResponseBytes?: number; stream?: boolean; totalUntil?: () => number } = {}) {
  return createGuardedFetch({
    allowHosts: [`127.0.0.1:${port}`],
    allowedNetworks: ["127.0.0.0/8"],
    connectTimeoutMs: 1_000,
    totalTimeoutMs: options.totalTimeoutMs ?? 3_000,
    maxResponseBytes: options.maxResponseBytes ?? 64 * 1024,
    streamEventStreams: options.stream ?? true,
    ...(options.totalUntil ? { totalUntil: options.totalUntil } : {}),
  });
}

async function readAll(response: Response): Promise<Array<{ text: string; at: number }>> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const chunks: Array<{ text: string; at: number }> = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    chunks.push({ text: decoder.decode(value), at: Date.now() });
  }
}

describe("guarded fetch: streamed event streams", () => {
  it("hands on the first event before the body ends", async () => {
    const s = await sseServer(500);
    const started = Date.now();
    const response = await guard(s.port)(`http://127.0.0.1:${s.port}/`);
    expect(Date.now() - started).toBeLessThan(400);
    const chunks = await readAll(response);
    expect(chunks.map((c) => c.text).join("")).toBe("data: one\n\ndata: two\n\n");
    expect(chunks[0]!.at - started).toBeLessThan(400);
    expect(chunks.at(-1)!.at - started).toBeGreaterThanOrEqual(450);
  });

  it("reads the body whole when streaming is off (the A2A channels)", async () => {
    const s = await sseServer(300);
    const started = Date.now();
    const response = await guard(s.port, { stream: false })(`http://127.0.0.1:${s.port}/`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(await response.text()).toBe("data: one\n\ndata: two\n\n");
  });

  it("keeps the total deadline over a streamed body", async () => {
    const s = await sseServer(2_000);
    const response = await guard(s.port, { totalTimeoutMs: 400 })(`http://127.0.0.1:${s.port}/`);
    const error = await readAll(response).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "TIMEOUT", details: { reason: "EGRESS_TOTAL_TIMEOUT" } });
  });

  it("lets the caller move the total deadline later while the body streams (MCP progress), and keeps the last one", async () => {
    const s = await sseServer(900);
    const started = Date.now();
    let until = started + 400;
    // Moved on at 300 ms to 1.5 s: the body (ending at ~900 ms) arrives whole.
    setTimeout(() => (until = started + 1_500), 300);
    const response = await guard(s.port, { totalTimeoutMs: 400, totalUntil: () => until })(`http://127.0.0.1:${s.port}/`);
    expect((await readAll(response)).map((c) => c.text).join("")).toBe("data: one\n\ndata: two\n\n");
    // Moved on once to 700 ms only: the body ending at 2 s is cut there, not at 400 ms and not at its end.
    const slow = await sseServer(2_000);
    const t0 = Date.now();
    let later = t0 + 400;
    setTimeout(() => (later = t0 + 700), 200);
    const cut = await guard(slow.port, { totalTimeoutMs: 400, totalUntil: () => later })(`http://127.0.0.1:${slow.port}/`);
    const error = await readAll(cut).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "TIMEOUT", details: { reason: "EGRESS_TOTAL_TIMEOUT" } });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(650);
    expect(Date.now() - t0).toBeLessThan(1_500);
  });

  it("keeps the size cap over a streamed body", async () => {
    const s = await sseServer(50, `data: ${"x".repeat(4_000)}\n\n`);
    const response = await guard(s.port, { maxResponseBytes: 1_000 })(`http://127.0.0.1:${s.port}/`);
    const error = await readAll(response).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "PAYLOAD_TOO_LARGE", details: { reason: "EGRESS_RESPONSE_TOO_LARGE" } });
  });
});

/**
 * A JSON-RPC success answer with `"id": null` (as `@reactive-agents/a2a` 0.9.0 sends) is accepted as the answer to
 * our one request; an error with id null, a success with ANOTHER id, and a body that is not JSON keep failing as
 * before. The agent is a raw HTTP server on loopback (so the exact bytes are ours); the client is the real one.
 */
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { createA2AClient } from "../../../src/foreign/a2a/client.js";
import { SwitchyardError } from "../../../src/errors.js";
import { createLogger } from "../../../src/logger.js";
import { startRawServer } from "./http-fixtures.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

const TASK = { id: "task-1", contextId: "c", status: { state: "TASK_STATE_COMPLETED" }, artifacts: [{ artifactId: "a", parts: [{ text: "done" }] }] };

/** A server answering every call with `answer(requestId)` as JSON; a client with a logger we can read. */
async function against(answer: (id: unknown) => unknown, contentType = "application/json") {
  const server = await startRawServer((_req, res, body) => {
    res.writeHead(200, { "content-type": contentType });
    res.end(JSON.stringify(answer((JSON.parse(body) as { id: unknown }).id)));
  });
  cleanups.push(() => server.close());
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString("utf8"));
      done();
    },
  });
  const client = createA2AClient({ fetch, timeoutMs: 5_000, logger: createLogger({ level: "debug", destination }) });
  const target = { endpoints: { "1.0": { url: `${server.url}/rpc` } } };
  const getTask = () => client.getTask({ card: target, protocol: "1.0", foreignTaskId: "task-1" });
  return { getTask, lines, server };
}

async function failure(promise: Promise<unknown>): Promise<SwitchyardError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SwitchyardError);
  return error as SwitchyardError;
}

describe("a JSON-RPC answer with id null", () => {
  it("is accepted when it is a success (result): the task comes back; the deviation is logged once per client", async () => {
    const { getTask, lines, server } = await against(() => ({ jsonrpc: "2.0", id: null, result: TASK }));
    expect(await getTask()).toMatchObject({ foreignTaskId: "task-1", state: "completed", artifacts: [{ artifactId: "a", parts: ["done"] }] });
    expect(await getTask()).toMatchObject({ state: "completed" });
    expect(server.requests).toHaveLength(2);
    expect(lines.filter((l) => l.includes("answers JSON-RPC successes with id null"))).toHaveLength(1);
  });

  it("is accepted with a JSON content type that has parameters", async () => {
    const { getTask } = await against(() => ({ jsonrpc: "2.0", id: null, result: TASK }), "application/json; charset=utf-8");
    expect(await getTask()).toMatchObject({ foreignTaskId: "task-1", state: "completed" });
  });

  it("stays an error when it carries `error` (a parse / invalid-request error concerns no request)", async () => {
    const { getTask, lines } = await against(() => ({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid Request" } }));
    const error = await failure(getTask());
    expect(error.details.reason).not.toBe(undefined);
    expect(error.message).toMatch(/Invalid Request/);
    expect(lines.filter((l) => l.includes("id null"))).toHaveLength(0);
  });

  it("is not stretched to other ids: a success answering another request id is still refused", async () => {
    const { getTask } = await against((id) => ({ jsonrpc: "2.0", id: typeof id === "number" ? id + 1000 : "other", result: TASK }));
    const error = await failure(getTask());
    expect(error.details).toMatchObject({ reason: "A2A_BAD_RESPONSE", retryable: false });
    expect(error.message).toMatch(/ID mismatch/);
  });
});

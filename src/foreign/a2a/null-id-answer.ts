/**
 * Tolerates one known deviation of independent A2A servers: a JSON-RPC SUCCESS answer carrying `"id": null` instead
 * of the request's id (`@reactive-agents/a2a` 0.9.0 answers every success that way). The `@a2a-js/sdk` client checks
 * the id and refuses such an answer (A2A_BAD_RESPONSE) — after the agent did the work.
 *
 * Why it is safe to accept: JSON-RPC's id exists to pair answers with requests on a shared channel. Over HTTP each
 * answer is the body of its own request's response, so a success answer to our single (non-batch) request is
 * unambiguous whatever its id says. What is NOT rewritten: an answer with `error` and id null (JSON-RPC's shape for
 * a parse / invalid-request error — it really concerns no request, and the SDK reports it as the error it is), an
 * answer whose id is anything but null (a mismatched id stays a mismatch), a batch, a request without an id (a
 * notification), and an `text/event-stream` answer (never buffered here).
 *
 * Bounded: the body is read whole, but it comes from the guarded fetch, which already caps response size.
 */
import { isJsonObject } from "./untrusted-json.js";

/** The request's JSON-RPC id when `body` is one request with a string or number id; otherwise undefined. */
export function jsonRpcRequestId(body: unknown): string | number | undefined {
  if (typeof body !== "string") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (!isJsonObject(parsed) || parsed.jsonrpc !== "2.0") return undefined;
  const id = parsed.id;
  return typeof id === "string" || typeof id === "number" ? id : undefined;
}

/**
 * The response as the SDK should see it: unchanged, or — for a JSON success answer with id null to a request with
 * id `requestId` — the same answer with that id, same status and headers. `rewritten` says which.
 */
export async function withRequestId(response: Response, requestId: string | number | undefined): Promise<{ response: Response; rewritten: boolean }> {
  if (requestId === undefined) return { response, rewritten: false };
  const type = response.headers.get("content-type") ?? "";
  if (!/^application\/(.+\+)?json\b/i.test(type.trim())) return { response, rewritten: false };
  const text = await response.text();
  const same = () => new Response(text, { status: response.status, statusText: response.statusText, headers: response.headers });
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { response: same(), rewritten: false };
  }
  if (!isJsonObject(parsed) || parsed.id !== null || !("result" in parsed) || "error" in parsed) return { response: same(), rewritten: false };
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  const body = JSON.stringify({ ...parsed, id: requestId });
  return { response: new Response(body, { status: response.status, statusText: response.statusText, headers }), rewritten: true };
}

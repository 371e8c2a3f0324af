/**
 * Reading JSON that a foreign agent controls: Agent Cards, push bodies, task snapshots. Everything here bounds the
 * work an attacker can make us do (bytes read, nesting walked) and turns every way of being malformed into a
 * SwitchyardError with a stable `details.reason`, so callers answer 4xx or fail closed without guessing.
 */
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { depthBeyond, MAX_JSON_DEPTH } from "../../json-depth.js";

export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** INVALID_ARGUMENT with `details.reason` (a stable machine word) and `details.path` (where in the document). */
export function malformed(reason: string, message: string, path?: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.InvalidArgument, message, { details: path === undefined ? { reason } : { reason, path } });
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Decodes strict UTF-8, parses JSON and checks nesting. Reasons: INVALID_ENCODING, INVALID_JSON, TOO_DEEP. */
export function parseUntrustedJson(bytes: Uint8Array, what: string): unknown {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw malformed("INVALID_ENCODING", `${what} is not valid UTF-8`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw malformed("INVALID_JSON", `${what} is not JSON: ${(error as Error).message}`);
  }
  assertDepth(value, what);
  return value;
}

/** TOO_DEEP past `maxDepth` (src/json-depth.ts: one iterative check for every untrusted JSON). */
export function assertDepth(value: unknown, what: string, maxDepth: number = MAX_JSON_DEPTH): void {
  if (depthBeyond(value, maxDepth) !== 0) throw malformed("TOO_DEEP", `${what} nests deeper than ${maxDepth} levels`);
}

/**
 * Reads a response body, giving up past `maxBytes` (checked against Content-Length first, then while streaming, so
 * a lying or missing length cannot make us buffer more). Throws PAYLOAD_TOO_LARGE with reason `BODY_TOO_LARGE`.
 */
export async function readCappedBody(response: Response, maxBytes: number, what: string): Promise<Uint8Array> {
  const tooLarge = () =>
    new SwitchyardError(ErrorCode.PayloadTooLarge, `${what} exceeds ${maxBytes} bytes`, { details: { reason: "BODY_TOO_LARGE", maxBytes } });
  const declared = Number(response.headers.get("content-length"));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  if (response.body === null) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

const ID_MAX_CHARS = 256;
// No control characters: ids end up in SQL rows, logs and URLs.
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;

/** A non-empty identifier of printable characters, at most 256 long; throws INVALID_ARGUMENT with `reason`. */
export function requireId(value: unknown, path: string, reason: string, what: string): string {
  if (typeof value !== "string" || value === "" || value.length > ID_MAX_CHARS || CONTROL_CHARS.test(value)) {
    throw malformed(reason, `${what} must be a non-empty string of at most ${ID_MAX_CHARS} printable characters`, path);
  }
  return value;
}

/** A string or absent; anything else is malformed. */
export function optionalString(value: unknown, path: string, what: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw malformed("INVALID_SHAPE", `${what} must be a string`, path);
  return value;
}

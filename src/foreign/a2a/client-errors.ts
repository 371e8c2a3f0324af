/**
 * Turning whatever a call to a foreign agent throws into a SwitchyardError the dispatcher can act on. Every error
 * carries `details.reason` and `details.retryable`: retry with backoff (and count towards the breaker) only when
 * `retryable` is true — the agent was unreachable, slow or failing on its side; a refusal (unknown task, version not
 * supported, bad parameters) will not change by asking again.
 *
 * The SDK throws plain `Error`s for HTTP failures and typed `JsonRpc*Error`s (with the wire `envelopeCode`) for
 * JSON-RPC errors; the HTTP status is taken from the response our fetch wrapper observed rather than parsed out of
 * the SDK's message. A SwitchyardError from the injected (guarded) fetch — egress refused — keeps its code, message
 * and details (gaining `retryable` — true only for UNAVAILABLE and TIMEOUT — when it carries none).
 */
import { isJsonRpcError } from "@a2a-js/sdk/errors";
import { ErrorCode, SwitchyardError } from "../../errors.js";

export type A2ACallFailure =
  | "A2A_NETWORK"
  | "A2A_TIMEOUT"
  | "A2A_HTTP_STATUS"
  | "A2A_RPC_ERROR"
  | "A2A_TASK_NOT_FOUND"
  | "A2A_NOT_CANCELABLE"
  | "A2A_BAD_RESPONSE"
  | "CARD_NO_PROTOCOL";

/** JSON-RPC codes (A2A §5.4) that mean "the agent failed on its side", worth another try. */
const TRANSIENT_RPC_CODES = new Set([-32603, -32006]);
const TASK_NOT_FOUND = -32001;
const TASK_NOT_CANCELABLE = -32002;

export interface CallContext {
  method: string;
  endpoint: string;
  /** Status of the last HTTP response the call saw, if any. */
  httpStatus?: number;
  /** The caller's signal (abort means the caller gave up: CANCELLED). */
  signal?: AbortSignal;
  /** The call's own timeout signal (abort means TIMEOUT). */
  timeout: AbortSignal;
  timeoutMs: number;
}

export function callFailure(reason: A2ACallFailure, code: ErrorCode, message: string, retryable: boolean, extra: Record<string, unknown> = {}, cause?: unknown): SwitchyardError {
  return new SwitchyardError(code, message, { cause, details: { reason, retryable, ...extra } });
}

export function mapCallError(error: unknown, ctx: CallContext): SwitchyardError {
  const where = { method: ctx.method, endpoint: ctx.endpoint };
  if (error instanceof SwitchyardError) return withRetryable(error);
  if (ctx.signal?.aborted) return new SwitchyardError(ErrorCode.Cancelled, `${ctx.method} cancelled by the caller`, { cause: error, details: { ...where, retryable: false } });
  if (ctx.timeout.aborted) {
    return callFailure("A2A_TIMEOUT", ErrorCode.Timeout, `${ctx.method} to ${ctx.endpoint} timed out after ${ctx.timeoutMs} ms`, true, where, error);
  }
  if (isJsonRpcError(error)) {
    const rpcCode = error.envelopeCode;
    const detail = { ...where, rpcCode, rpcMessage: clip(error.message) };
    if (rpcCode === TASK_NOT_FOUND) return callFailure("A2A_TASK_NOT_FOUND", ErrorCode.NotFound, `${ctx.method}: the agent does not know the task`, false, detail, error);
    if (rpcCode === TASK_NOT_CANCELABLE) return callFailure("A2A_NOT_CANCELABLE", ErrorCode.FailedPrecondition, `${ctx.method}: the task can no longer be canceled`, false, detail, error);
    const transient = TRANSIENT_RPC_CODES.has(rpcCode);
    return callFailure("A2A_RPC_ERROR", transient ? ErrorCode.Unavailable : ErrorCode.FailedPrecondition, `${ctx.method} failed: JSON-RPC error ${rpcCode}: ${clip(error.message)}`, transient, detail, error);
  }
  if (ctx.httpStatus !== undefined && (ctx.httpStatus < 200 || ctx.httpStatus >= 300)) {
    const status = ctx.httpStatus;
    const transient = status >= 500 || status === 408 || status === 429;
    return callFailure("A2A_HTTP_STATUS", transient ? ErrorCode.Unavailable : ErrorCode.FailedPrecondition, `${ctx.method} to ${ctx.endpoint} answered HTTP ${status}`, transient, { ...where, status }, error);
  }
  if (ctx.httpStatus !== undefined) {
    // A 2xx came back but the SDK could not use it: a broken or hostile agent, not a blip.
    return callFailure("A2A_BAD_RESPONSE", ErrorCode.Unavailable, `${ctx.method} got an unusable response: ${clip(describe(error))}`, false, where, error);
  }
  return callFailure("A2A_NETWORK", ErrorCode.Unavailable, `${ctx.method} to ${ctx.endpoint} failed: ${clip(describe(error))}`, true, where, error);
}

/** A guard's error keeps its code and message; it only gains `retryable` when it did not say. */
function withRetryable(error: SwitchyardError): SwitchyardError {
  if (typeof error.details.retryable === "boolean") return error;
  const retryable = error.code === ErrorCode.Unavailable || error.code === ErrorCode.Timeout;
  return new SwitchyardError(error.code, error.message, { cause: error, details: { ...error.details, retryable } });
}

/** The error for a caller's signal that fired before or while waiting. */
export function abortError(reason: unknown): SwitchyardError {
  if (reason instanceof Error && reason.name === "TimeoutError") return new SwitchyardError(ErrorCode.Timeout, reason.message, { cause: reason });
  return new SwitchyardError(ErrorCode.Cancelled, reason instanceof Error ? reason.message : "cancelled", { cause: reason });
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}

// Agent-supplied text ends up in audit rows and logs: keep it short.
function clip(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

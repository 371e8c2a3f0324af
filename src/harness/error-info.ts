/**
 * How a failed turn is described to the coordinator: a stable code, a message and whether a retry can help.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import { isNonRetryableError } from "./handler-errors.js";

export interface ErrorInfo {
  code: string;
  message: string;
  retryable: boolean;
}

/** Failures that a retry of the same input cannot fix; the coordinator skips the remaining attempts. */
const NON_RETRYABLE: ReadonlySet<string> = new Set<string>([
  ErrorCode.InvalidArgument,
  ErrorCode.PolicyDenied,
  ErrorCode.PayloadTooLarge,
  ErrorCode.MalformedEnvelope,
]);

// Error messages travel in every RESULT and land in the audit trail; a handler dumping a stack trace or a whole
// document into one must not blow the envelope size limit.
const MAX_MESSAGE_CHARS = 2_000;

function clip(message: string): string {
  return message.length <= MAX_MESSAGE_CHARS ? message : `${message.slice(0, MAX_MESSAGE_CHARS)}…`;
}

/**
 * A NonRetryableError keeps its code and is never retried; a SwitchyardError keeps its code (INVALID_ARGUMENT and a
 * few more are not retried); anything else thrown by a handler is HANDLER_FAILED and retryable.
 */
export function errorInfoOf(error: unknown): ErrorInfo {
  if (isNonRetryableError(error)) return { code: error.code, message: clip(error.message), retryable: false };
  if (error instanceof SwitchyardError) {
    return { code: error.code, message: clip(error.message), retryable: !NON_RETRYABLE.has(error.code) };
  }
  const message = error instanceof Error ? error.message || error.name : String(error);
  return { code: ErrorCode.HandlerFailed, message: clip(message), retryable: true };
}

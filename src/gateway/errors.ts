/**
 * Turning whatever a handler throws into a ConnectError a person can act on.
 *
 * SwitchyardError codes map onto Connect codes; the message keeps the field path (`steps[1].to: …`), and an
 * `ErrorDetail` carries Switchyard's own code, the path, every validation problem and the details as JSON (in the
 * Connect JSON body under `details[].debug`). Anything unexpected becomes INTERNAL with a reference to the log
 * line, never with the internal message: it may name tables, hosts or another tenant's data.
 */
import { randomBytes } from "node:crypto";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { JsonObject } from "@bufbuild/protobuf";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { ErrorDetailSchema } from "../gen/switchyard/api/v1/errors_pb.js";
import type { Logger } from "../logger.js";
import { watchCall } from "./call-outcome.js";
import { unreachableDependencyOf, type DependencyHealth } from "../process/dependency-health.js";

const CONNECT_CODES: Partial<Record<ErrorCode, Code>> = {
  [ErrorCode.InvalidArgument]: Code.InvalidArgument,
  [ErrorCode.InvalidWorkflow]: Code.InvalidArgument,
  [ErrorCode.InvalidPolicy]: Code.InvalidArgument,
  [ErrorCode.MalformedEnvelope]: Code.InvalidArgument,
  [ErrorCode.PayloadTooLarge]: Code.ResourceExhausted,
  [ErrorCode.NotFound]: Code.NotFound,
  [ErrorCode.AlreadyExists]: Code.AlreadyExists,
  [ErrorCode.FailedPrecondition]: Code.FailedPrecondition,
  [ErrorCode.SchemaTooNew]: Code.FailedPrecondition,
  [ErrorCode.PolicyDenied]: Code.PermissionDenied,
  [ErrorCode.ClearanceDenied]: Code.PermissionDenied,
  [ErrorCode.BudgetExceeded]: Code.ResourceExhausted,
  [ErrorCode.Timeout]: Code.DeadlineExceeded,
  [ErrorCode.Cancelled]: Code.Canceled,
  [ErrorCode.ForeignUnavailable]: Code.Unavailable,
  [ErrorCode.Unavailable]: Code.Unavailable,
  [ErrorCode.Unauthenticated]: Code.Unauthenticated,
  [ErrorCode.PermissionDenied]: Code.PermissionDenied,
  [ErrorCode.ResourceExhausted]: Code.ResourceExhausted,
};


function jsonSafe(details: Record<string, unknown>): JsonObject {
  try {
    return JSON.parse(JSON.stringify(details)) as JsonObject;
  } catch {
    return {};
  }
}

function violationsOf(details: Record<string, unknown>): Array<{ path: string; reason: string }> {
  const errors = details.errors;
  if (!Array.isArray(errors)) return [];
  return errors
    .filter((e): e is { path: unknown; reason: unknown } => typeof e === "object" && e !== null)
    .map((e) => ({ path: String(e.path ?? ""), reason: String(e.reason ?? "") }));
}

/** A SwitchyardError as the client sees it. Codes without a mapping are INTERNAL. */
export function connectErrorOf(error: SwitchyardError, logger?: Logger): ConnectError {
  const code = CONNECT_CODES[error.code];
  if (code === undefined) return internal(error, logger);
  const path = typeof error.details.path === "string" ? error.details.path : "";
  // A person reading only the message should still see which field is wrong.
  const message = path && !error.message.includes(path) ? `${path}: ${error.message}` : error.message;
  return new ConnectError(message, code, undefined, [
    { desc: ErrorDetailSchema, value: { code: error.code, path, violations: violationsOf(error.details), details: jsonSafe(error.details) } },
  ], error);
}

function internal(error: unknown, logger?: Logger): ConnectError {
  const ref = randomBytes(6).toString("hex");
  logger?.error({ err: error, ref }, "request failed with an internal error");
  return new ConnectError(`internal error (ref ${ref}); the gateway log has the details`, Code.Internal, undefined, [
    { desc: ErrorDetailSchema, value: { code: ErrorCode.Internal, details: { ref } } },
  ], error);
}

/**
 * Normalises anything a handler threw. ConnectErrors (auth, Connect's own) pass through unchanged. An unreachable
 * Postgres or Redis is UNAVAILABLE (the caller may retry), recorded by `health` — which logs the outage once,
 * not once per failed request.
 */
export function toConnectError(error: unknown, logger?: Logger, health?: DependencyHealth): ConnectError {
  if (error instanceof ConnectError) return error;
  const dependency = unreachableDependencyOf(error);
  if (dependency) {
    if (health) health.unreachable(dependency, error);
    else logger?.warn({ err: error }, "a backing service is unreachable");
    return connectErrorOf(new SwitchyardError(ErrorCode.Unavailable, `a backing service (${dependency === "postgres" ? "Postgres" : "Redis"}) is unreachable; try again shortly`), logger);
  }
  if (error instanceof SwitchyardError) return connectErrorOf(error, logger);
  if (error instanceof Error && error.name === "AbortError") return new ConnectError("the request was cancelled", Code.Canceled);
  return internal(error, logger);
}

/** Outermost interceptor: maps errors of unary calls and of server streams (thrown mid-stream) alike. */
export function createErrorInterceptor(logger: Logger, health?: DependencyHealth): Interceptor {
  return (next) => (req) => watchCall(next, req, { failed: (error) => toConnectError(error, logger, health) });
}

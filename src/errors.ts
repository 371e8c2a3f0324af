/**
 * The one error type of Switchyard. Every failure that crosses a module boundary is a SwitchyardError with a
 * stable code; API and CLI surfaces map codes onto their own status vocabulary.
 */
export const ErrorCode = {
  /** Configuration from the environment or options is unusable. */
  Config: "CONFIG",
  /** Caller input failed validation (workflow definition, policy, CLI argument). `details.path` names the field. */
  InvalidArgument: "INVALID_ARGUMENT",
  /** A workflow definition failed validation. */
  InvalidWorkflow: "INVALID_WORKFLOW",
  /** A policy document failed validation. */
  InvalidPolicy: "INVALID_POLICY",
  /** An envelope could not be decoded or is missing required fields. */
  MalformedEnvelope: "MALFORMED_ENVELOPE",
  /** A payload exceeds the configured size limit. */
  PayloadTooLarge: "PAYLOAD_TOO_LARGE",
  NotFound: "NOT_FOUND",
  AlreadyExists: "ALREADY_EXISTS",
  /** A state transition was refused because the current state does not allow it. */
  FailedPrecondition: "FAILED_PRECONDITION",
  /** The governor denied a hop. */
  PolicyDenied: "POLICY_DENIED",
  /** The hop's clearance floor exceeds the destination's ceiling. */
  ClearanceDenied: "CLEARANCE_DENIED",
  BudgetExceeded: "BUDGET_EXCEEDED",
  /** A step or delegation exceeded its deadline. */
  Timeout: "TIMEOUT",
  Cancelled: "CANCELLED",
  /** A worker handler threw. */
  HandlerFailed: "HANDLER_FAILED",
  /** A handler delegated while BUS_ROUTED is off for its role/team; the step fails without retries. */
  BusNotRouted: "BUS_NOT_ROUTED",
  /** FOREIGN dispatch is not available in this build. */
  ForeignUnavailable: "FOREIGN_UNAVAILABLE",
  /** Redis is configured in a way that can lose work (e.g. an evicting maxmemory-policy). */
  UnsafeRedis: "UNSAFE_REDIS",
  /** The database schema is newer than this code knows. */
  SchemaTooNew: "SCHEMA_TOO_NEW",
  /** The audit chain failed verification. */
  AuditBroken: "AUDIT_BROKEN",
  /** A coordinator lost its lease on a tenant's shard: whatever it was about to commit for it is rolled back. */
  Fenced: "FENCED",
  /**
   * An audit-chain head kept in memory was moved by another writer meanwhile: the transaction rolls back and is
   * applied again, reading the head under its lock (governance/audit-heads.ts). Retried inside the engine.
   */
  StaleHead: "STALE_HEAD",
  /** No credentials, or credentials that do not hold (an unknown key, an expired console session). */
  Unauthenticated: "UNAUTHENTICATED",
  /** Known credentials that may not do this (a tenant key on an admin service, a console call without its CSRF token). */
  PermissionDenied: "PERMISSION_DENIED",
  /** The caller is over a rate limit (failed console sign-ins); `details.retryAfterMs` says when to try again. */
  ResourceExhausted: "RESOURCE_EXHAUSTED",
  Unavailable: "UNAVAILABLE",
  Internal: "INTERNAL",
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface SwitchyardErrorOptions {
  cause?: unknown;
  details?: Record<string, unknown>;
}

/**
 * Marks a SwitchyardError made by any copy of this module. Two copies meet in one process: the `switchyard` CLI
 * runs from its bundle (dist/bundle/) while a handler it serves imports `switchyard/harness` (dist/src/): an error
 * thrown across that line must still be recognised, and keep its code.
 */
const BRAND = Symbol.for("switchyard.SwitchyardError");

export class SwitchyardError extends Error {
  override readonly name = "SwitchyardError";
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options: SwitchyardErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details ?? {};
    Object.defineProperty(this, BRAND, { value: true });
  }

  /** `instanceof` by brand, not by prototype: true for an error of another copy of this class too (see BRAND). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  /** Normalises anything thrown into a SwitchyardError, keeping the original as `cause`. */
  static from(reason: unknown, fallback: ErrorCode = ErrorCode.Internal): SwitchyardError {
    if (reason instanceof SwitchyardError) return reason;
    if (reason instanceof Error) {
      if (reason.name === "AbortError") return new SwitchyardError(ErrorCode.Cancelled, reason.message, { cause: reason });
      if (reason.name === "TimeoutError") return new SwitchyardError(ErrorCode.Timeout, reason.message, { cause: reason });
      return new SwitchyardError(fallback, reason.message, { cause: reason });
    }
    return new SwitchyardError(fallback, String(reason));
  }

  toJSON(): { code: ErrorCode; message: string; details: Record<string, unknown> } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

export function isSwitchyardError(value: unknown, code?: ErrorCode): value is SwitchyardError {
  return value instanceof SwitchyardError && (code === undefined || value.code === code);
}

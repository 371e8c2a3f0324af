/**
 * The errors a handler throws on purpose. Anything else a handler throws is HANDLER_FAILED and retried as the step
 * allows (`retries` in the workflow); these say that a retry of the same input cannot help.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";

/** A step error code: upper-case letters, digits and `_`, like the coordinator's own (`HANDLER_FAILED`). */
const CODE_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/;

export interface NonRetryableErrorOptions {
  /**
   * The step error code the coordinator records (and a delegating parent sees in `reply.error.code`).
   * @defaultValue "NON_RETRYABLE"
   */
  code?: string;
  cause?: unknown;
}

/**
 * Thrown by a handler to fail the step now, without the retries the workflow allows: the input is wrong, the
 * request is refused, or the outcome is decided. The harness reports it as a RESULT error with `retryable: false`.
 *
 * ```ts
 * if (!isInvoice(work.input)) throw new NonRetryableError("input is not an invoice", { code: "BAD_INVOICE" });
 * ```
 */
export class NonRetryableError extends Error {
  override readonly name = "NonRetryableError";
  readonly code: string;

  constructor(message: string, options: NonRetryableErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const code = options.code ?? "NON_RETRYABLE";
    // A code the coordinator cannot show as one word would be a bug in the handler: say so where it is made.
    if (!CODE_PATTERN.test(code)) {
      throw new SwitchyardError(ErrorCode.InvalidArgument, `NonRetryableError code must be 1-64 upper-case letters, digits or "_" starting with a letter, got ${JSON.stringify(code)}`);
    }
    this.code = code;
  }
}

/**
 * Whether a thrown value is a NonRetryableError. By brand as well as by class: a handler bundled with its own copy
 * of this module (another install of the package) still throws one the harness recognises.
 */
export function isNonRetryableError(error: unknown): error is NonRetryableError {
  return error instanceof NonRetryableError || (error instanceof Error && error.name === "NonRetryableError" && typeof (error as { code?: unknown }).code === "string");
}

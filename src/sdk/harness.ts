/**
 * `switchyard/harness`: the public worker API. Everything a worker author writes against — the handler types, the
 * context, delegation, the "do not retry" error and the harness that runs a handler on a role or team queue — and
 * nothing of the wiring behind it. Re-exported from src/harness/, which stays the implementation.
 */
export {
  createHarness,
  HARNESS_GROUP,
  type Harness,
  type HarnessOptions,
  type HarnessStats,
} from "../harness/harness.js";
export {
  isDelegation,
  type AnyHandler,
  type DelegateAllOptions,
  type DelegateOptions,
  type Delegation,
  type Handler,
  type HandlerContext,
  type Reply,
  type ReplyOptions,
  type ReplyOutcome,
  type Resume,
  type SubQuery,
  type SubQueryRequest,
  type UsageReport,
  type Work,
} from "../harness/types.js";
export { isNonRetryableError, NonRetryableError, type NonRetryableErrorOptions } from "../harness/handler-errors.js";
export { formatStepResultRef, parseStepResultRef, type ResultReader, type StepResultRef } from "../harness/result-reader.js";
export { errorInfoOf, type ErrorInfo } from "../harness/error-info.js";
export type { TurnCheck, TurnRef } from "../harness/turn-check.js";
export { MAX_CORRELATION_ID_CHARS, type Destination } from "../domain.js";
export { ErrorCode, isSwitchyardError, SwitchyardError } from "../errors.js";
export type { Logger } from "../logger.js";

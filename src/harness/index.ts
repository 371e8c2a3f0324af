/**
 * The harness's public surface, for handler authors and process wiring.
 */
export { createHarness, HARNESS_GROUP, type Harness, type HarnessOptions, type HarnessStats } from "./harness.js";
export { isDelegation, type AnyHandler, type Delegation, type DelegateAllOptions, type DelegateOptions, type Handler, type HandlerContext, type Reply, type ReplyOptions, type ReplyOutcome, type Resume, type SubQuery, type SubQueryRequest, type UsageReport, type Work } from "./types.js";
export { formatStepResultRef, parseStepResultRef, type ResultReader, type StepResultRef } from "./result-reader.js";
export { errorInfoOf, type ErrorInfo } from "./error-info.js";
export { isNonRetryableError, NonRetryableError, type NonRetryableErrorOptions } from "./handler-errors.js";
export { MAX_CORRELATION_ID_CHARS } from "../domain.js";
export type { TurnCheck, TurnRef } from "./turn-check.js";

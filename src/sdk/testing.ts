/**
 * `switchyard/testing`: the worker author's testing kit.
 * - `runHandler(handler, work, options)`: one handler against a fake context, delegation round trips included; no
 *   services needed.
 * - `createTestStack()`: the real coordinator and harnesses in this process, on a scratch PostgreSQL database and a
 *   unique Redis key prefix, for workflow-level tests (needs REDIS_URL / DATABASE_URL, or the local defaults).
 */
export { runHandler, type DelegatedQuery, type HandlerRun, type RunHandlerOptions, type TurnRecord, type WorkFixture } from "./run-handler.js";
export { errorInfoOf, type ErrorInfo } from "../harness/error-info.js";
export type { UsageTotals } from "../harness/handler-usage.js";
export { createTestStack, type RegisterOptions, type TestStack, type TestStackOptions } from "./test-stack.js";
export { DEFAULT_STALL_MS, describeTask, waitForProgress, waitForTask, type WaitForProgressOptions, type WaitForTaskOptions } from "./progress-wait.js";
export type { StepView, TaskView } from "../tasks/tasks.js";

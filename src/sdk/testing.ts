/**
 * `switchyard/testing`: the worker author's testing kit.
 * - `runHandler(handler, work, options)`: one handler against a fake context, delegation round trips included; no
 *   services needed.
 * - `createTestStack()`: the real coordinator and harnesses in this process, on a scratch PostgreSQL database and a
 *   unique Redis key prefix, for workflow-level tests (needs REDIS_URL / DATABASE_URL, or the local defaults). Its
 *   surface: `submitWorkflow`, `register` (a handler on a queue), `startTask` / `waitForTask` / `runTask`,
 *   `waitForStep` (a step reaches a status; by default it settled: completed, failed, cancelled or parked),
 *   `approve` / `deny` (the task's pending approval, decided through the tenant API once its step parks), `client`
 *   (the `switchyard/client` clients for the stack's tenant, in process, through the gateway's auth) and `close`.
 *   The stack's internals (pool, bus, task service) are not part of it.
 * - The progress-based waits: they fail once nothing moved for `stallMs`, never after a fixed total, naming what is stuck.
 */
export { runHandler, type DelegatedQuery, type HandlerRun, type RunHandlerOptions, type TurnRecord, type WorkFixture } from "./run-handler.js";
export { errorInfoOf, type ErrorInfo } from "../harness/error-info.js";
export type { UsageTotals } from "../harness/handler-usage.js";
export { createTestStack, type RegisterOptions, type TestStack, type TestStackOptions } from "./test-stack.js";
export { ApprovalPick, SETTLED_STEP_STATUSES, STEP_STATUS_UNREACHABLE, type ApprovalDecision, type DecideOptions, type WaitForStepOptions } from "./stack-waits.js";
export type { SwitchyardClient } from "./client.js";
export type { StepStatus, TaskStatus } from "../core/model.js";
export { DEFAULT_STALL_MS, describeTask, waitForProgress, waitForTask, type WaitForProgressOptions, type WaitForTaskOptions } from "./progress-wait.js";
export type { StepView, TaskView } from "../tasks/tasks.js";

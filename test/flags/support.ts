/** Helpers shared by the live-flag tests. */
import type { FlagName, ScopeKind } from "../../src/flags/flag-types.js";
import { setFlag } from "../../src/flags/flag-changes.js";
import { createPostgresFlagStore } from "../../src/store/flags/postgres-flag-store.js";
import type { TaskView } from "../../src/tasks/tasks.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { waitFor, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";

/** Stores a flag value the way `switchyard flags set` does (audited); running processes see it at their next poll. */
export async function flip(rt: TestRuntime, name: FlagName, scopeKind: ScopeKind, scope: string, enabled: boolean): Promise<void> {
  await setFlag(createPostgresFlagStore(), rt.pool, { name, scopeKind, scope, enabled, actor: "test:sre", reason: `${enabled ? "on" : "off"} for a test` });
}

export async function submit(rt: TestRuntime, orgId: string, yaml: string): Promise<void> {
  await submitWorkflow(rt.pool, orgId, parseWorkflowDefinition(yaml));
}

export async function finished(rt: TestRuntime, orgId: string, taskId: string): Promise<TaskView> {
  return waitForTask(rt.tasks, orgId, taskId);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function deferred(): { promise: Promise<void>; resolve(): void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Resolves with how long `condition` took to hold, failing after `withinMs`. */
export async function within(withinMs: number, condition: () => boolean | Promise<boolean>, what: string): Promise<number> {
  const started = Date.now();
  await waitFor(async () => (await condition()) || undefined, { timeoutMs: withinMs, intervalMs: 20, what });
  return Date.now() - started;
}

/**
 * Progress-based waiting for the tests: moved to src/sdk/progress-wait.ts so `switchyard/testing` ships the same
 * waits; re-exported here so tests keep importing them from their support folder.
 */
export * from "../../src/sdk/progress-wait.js";

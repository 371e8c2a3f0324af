import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    // A backstop, not a budget: waits for work are progress-based (test/support/wait.ts) and fail after
    // DEFAULT_STALL_MS (20 s) without movement, naming what is stuck; this must stay well above that so they decide.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});

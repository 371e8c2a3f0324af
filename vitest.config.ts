import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { clusterToolsAvailable } from "./test/support/redis-cluster.js";

/**
 * The tests that run a second time against a local 3-master Redis Cluster (issue 11 §4): the bus suite, one
 * end-to-end workflow, and the crash test. Tests that need a single Redis (they restart it, or use a database
 * number) stay out; so do the bus tests that never touch Redis.
 */
const CLUSTER_INCLUDE = ["test/bus/**/*.test.ts", "test/integration/core-loop.test.ts", "test/crash/crash.test.ts"];
const CLUSTER_EXCLUDE = ["test/bus/envelope-wire.test.ts", "test/bus/keys.test.ts", "test/bus/redis-url.test.ts"];

const cluster = clusterToolsAvailable();
// The config is evaluated more than once per run (the root and its projects): say it once.
const warned = globalThis as { switchyardClusterWarned?: boolean };
if (!cluster && !warned.switchyardClusterWarned) {
  warned.switchyardClusterWarned = true;
  console.warn(
    "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n" +
      "!! redis-server / redis-cli not found: the Redis Cluster tests (project \"cluster\") are SKIPPED.\n" +
      "!! Install them (apt-get install redis-server) to run them; CI must have them.\n" +
      "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n",
  );
}

/**
 * Inside this repo the package's own entry points resolve to the source (no build needed); tsconfig.json's `paths`
 * says the same to the typechecker. Outside, `exports` in package.json points at dist/.
 */
const SDK_ALIASES = ["harness", "testing", "client"].map((entry) => ({
  find: `switchyard/${entry}`,
  replacement: fileURLToPath(new URL(`./src/sdk/${entry}.ts`, import.meta.url)),
}));

export default defineConfig({
  resolve: { alias: SDK_ALIASES },
  test: {
    globalSetup: ["test/support/global-setup.ts"],
    // A backstop, not a budget: waits for work are progress-based (test/support/wait.ts) and fail after
    // DEFAULT_STALL_MS (20 s) without movement, naming what is stuck; this must stay well above that so they decide.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: "forks",
    projects: [
      // The examples' own tests (examples/handlers/*.test.ts) run with the rest.
      { extends: true, test: { name: "redis", include: ["test/**/*.test.ts", "examples/**/*.test.ts"], exclude: ["test/console/**"] } },
      // The browser suite (issue 13): Chromium against a whole stack; one file at a time, more time per hook.
      { extends: true, test: { name: "console", include: ["test/console/**/*.test.ts"], hookTimeout: 120_000, fileParallelism: false } },
      ...(cluster
        ? [
            {
              extends: true as const,
              test: {
                name: "cluster",
                include: CLUSTER_INCLUDE,
                exclude: CLUSTER_EXCLUDE,
                globalSetup: ["test/support/cluster-setup.ts"],
                setupFiles: ["test/support/cluster-env.ts"],
              },
            },
          ]
        : []),
    ],
  },
});

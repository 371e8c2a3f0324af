/**
 * setupFile of the `cluster` vitest project: every test file of it talks to the run's Redis Cluster. REDIS_URL is
 * what test/support/env.ts reads and what spawned CLI processes inherit.
 */
import { inject } from "vitest";

process.env.REDIS_URL = inject("clusterRedisUrl");

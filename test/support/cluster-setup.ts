/**
 * globalSetup of the `cluster` vitest project: starts a local Redis Cluster for the run and hands its URL to the
 * project's test files (cluster-env.ts puts it in REDIS_URL, which child processes inherit).
 */
import type { TestProject } from "vitest/node";
import { startLocalCluster } from "./redis-cluster.js";

declare module "vitest" {
  export interface ProvidedContext {
    clusterRedisUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const cluster = await startLocalCluster();
  project.provide("clusterRedisUrl", cluster.url);
  return () => cluster.stop();
}

/**
 * The test run's PostgreSQL and Redis on a machine where nothing answers and no URL is configured (issue 12 §5):
 * the same embedded PostgreSQL and redis-server as the demo, started once per `vitest run` in a scratch folder
 * (fsync off: throw-away data) and handed to the test workers through DATABASE_URL / REDIS_URL, which they inherit.
 * With local servers answering (a developer's machine, CI) or URLs set, nothing changes.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config/index.js";
import { resolveLocalServices } from "../../src/services/resolve-local-services.js";

/** Returns the teardown (stops what was started; nothing when nothing was). */
export async function startTestServices(): Promise<() => Promise<void>> {
  const config = loadConfig(process.env);
  if (config.services.databaseUrlSet && config.services.redisUrlSet) return async () => {};
  const dir = mkdtempSync(join(tmpdir(), "sy-test-services-"));
  // As root the embedded PostgreSQL runs as `nobody`, which must be able to enter the folder.
  chmodSync(dir, 0o711);
  const services = await resolveLocalServices({
    config: { ...config, services: { ...config.services, dataDir: dir } },
    cwd: dir,
    durability: "scratch",
    // Every worker's test databases and pools at once.
    maxConnections: 400,
  }).catch((error: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  if (services.postgres.owned) process.env.DATABASE_URL = services.postgres.url;
  if (services.redis.owned) process.env.REDIS_URL = services.redis.url;
  for (const service of [services.postgres, services.redis]) {
    if (service.owned) console.log(`test services: ${service.service}: ${service.description}`);
  }
  return async () => {
    await services.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}

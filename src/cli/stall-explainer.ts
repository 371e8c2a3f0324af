/**
 * Stall explanations for `task start --wait` and `task watch`. Without `--url` they come from the database and
 * Redis (src/diagnosis/, opened on the first stall only, so a task that moves costs no extra connection). With
 * `--url` the gateway reads the same facts and answers them (TaskService.Explain).
 */
import type { TaskView } from "../tasks/tasks.js";
import { createRedisConnection, type RedisClient } from "../bus/redis-connection.js";
import { explainStall } from "../diagnosis/explain-stall.js";
import { createLocalStallFacts } from "../diagnosis/stall-facts-local.js";
import { notAnswering } from "../process/service-endpoints.js";
import type { Pool } from "../store/db.js";
import type { CliContext } from "./context.js";
import type { TenantApi } from "./remote/tenant-api.js";

export interface StallExplainer {
  explain(view: TaskView): Promise<string[]>;
  close(): Promise<void>;
}

export function createStallExplainer(ctx: CliContext, api: Pick<TenantApi, "explainTask">): StallExplainer {
  return ctx.remote ? remoteExplainer(api) : localExplainer(ctx);
}

function localExplainer(ctx: CliContext): StallExplainer {
  let opened: Promise<{ pool: Pool; redis: RedisClient }> | undefined;
  const open = () =>
    (opened ??= (async () => {
      const pool = await ctx.openPool();
      const redis = createRedisConnection(ctx.config.redisUrl);
      // Without a listener ioredis prints every failed reconnect; the failed connect below says it once.
      redis.on("error", () => {});
      try {
        await redis.connect();
      } catch (error) {
        redis.disconnect();
        await pool.end().catch(() => {});
        throw notAnswering(ctx.endpoints.redis, error);
      }
      return { pool, redis };
    })());
  return {
    async explain(view) {
      const { pool, redis } = await open();
      return explainStall(view, createLocalStallFacts({ db: pool, redis, keyPrefix: ctx.config.bus.keyPrefix, flagDefaults: ctx.config.flags }));
    },
    async close() {
      if (!opened) return;
      const parts = await opened.catch(() => undefined);
      parts?.redis.disconnect();
      await parts?.pool.end().catch(() => {});
    },
  };
}

function remoteExplainer(api: Pick<TenantApi, "explainTask">): StallExplainer {
  return {
    async explain(view) {
      if (!api.explainTask) return [];
      return api.explainTask(view.id);
    },
    async close() {},
  };
}

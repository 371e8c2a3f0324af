/**
 * The Postgres adapters of the engine's storage ports (engine-store.ts beside this), wired from the adapter of
 * each table. runtime.ts builds one and hands it to the engine; the engine itself imports no SQL.
 */
import { isDatabaseUnavailable, retryOnConflict, withTransaction } from "../db.js";
import type { EngineStore } from "./engine-store.js";
import { appendAudit } from "../audit/postgres-audit-store.js";
import type { Logger } from "../../logger.js";
import type { Metrics } from "../../metrics/metrics.js";
import { createReplyFactsSource, type ReplyFactsOptions } from "../replies/postgres-reply-facts.js";
import { costDay } from "../../domain.js";
import { admissionScope, anyConcurrencyKey, loadAdmission } from "./postgres-admission-store.js";
import { dedupe, forgetRefused } from "./postgres-envelope-store.js";
import { persistPhase } from "./postgres-phase-writer.js";
import { loadTasksForUpdate } from "./postgres-task-store.js";
import { createPostgresTraceRootStore } from "../telemetry/postgres-trace-root-store.js";
import { accrueDailyCost, createTenantFactsSource, type EgressSwitch, type ReplySwitch } from "./postgres-tenant-facts.js";

export interface PostgresEngineStoreOptions {
  /** Where the engine's writes log (a REPLY over the payload cap, a reply row's fate). */
  logger: Logger;
  metrics?: Metrics | undefined;
  maxPayloadBytes: number;
  /** How many tenant shards there are (config.shards.count): WORK and REPLY name their tenant's shard inbox. */
  shardCount: number;
  /** The egress and reply switches tenant facts read (the live flags). @defaultValue both off for every tenant */
  egress?: EgressSwitch | undefined;
  replies?: ReplySwitch | undefined;
  /** How reply facts select a connection and scan for secrets. @defaultValue the vault's and secretlint's */
  replyFacts?: ReplyFactsOptions;
}

export function createPostgresEngineStore(options: PostgresEngineStoreOptions): EngineStore {
  const persistDeps = { logger: options.logger, metrics: options.metrics, maxPayloadBytes: options.maxPayloadBytes, shardCount: options.shardCount };
  return {
    transactions: {
      transaction: withTransaction,
      retryOnConflict,
      async savepoint(tx, fn) {
        await tx.query("SAVEPOINT engine_phase");
        let result;
        try {
          result = await fn();
        } catch (error) {
          // A connection that is gone has no savepoint to go back to; the transaction is lost anyway.
          if (!isDatabaseUnavailable(error)) await tx.query("ROLLBACK TO SAVEPOINT engine_phase");
          throw error;
        }
        await tx.query("RELEASE SAVEPOINT engine_phase");
        return result;
      },
      isUnavailable: isDatabaseUnavailable,
    },
    envelopes: { fresh: dedupe, forgetRefused },
    tasks: {
      lockForUpdate: (tx, taskIds, tenants, lock) => loadTasksForUpdate(tx, taskIds, { orgIds: tenants.orgIds, day: costDay(tenants.nowMs) }, lock),
      persist: (tx, before, after, effects, gate) => persistPhase(persistDeps, tx, before, after, effects, gate),
    },
    admission: {
      // Dormant without limits and concurrency keys: not even the batch's destinations are gathered.
      load: async (tx, limits, states, inputs) => (limits.empty && !anyConcurrencyKey(states) ? undefined : loadAdmission(tx, limits, admissionScope(states, inputs))),
    },
    tenantFacts: createTenantFactsSource({ ...(options.egress ? { egress: options.egress } : {}), ...(options.replies ? { replies: options.replies } : {}) }),
    costs: { accrue: accrueDailyCost },
    audit: { append: (tx, entries, append) => appendAudit(tx, entries, append.heads ? { heads: append.heads } : {}) },
    replyFacts: createReplyFactsSource(options.replyFacts),
    traceRoots: createPostgresTraceRootStore(),
  };
}

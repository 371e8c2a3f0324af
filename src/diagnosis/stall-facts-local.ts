/**
 * StallFacts read from Postgres (flags, approvals, bridges, through their ports in store/) and Redis (XINFO of a
 * queue's harness group): what `switchyard task watch` / `task start --wait` use without `--url`. Flags are table
 * rows over this process's environment defaults — the defaults of the process being diagnosed may differ, which is
 * why each flag fact says where its value came from.
 */
import type { RedisClient } from "../bus/redis-connection.js";
import { streamKey } from "../bus/keys.js";
import type { FlagsConfig } from "../config/index.js";
import type { FlagName, ScopeKind } from "../flags/flag-types.js";
import { FlagValues } from "../flags/flag-values.js";
import { HARNESS_GROUP } from "../harness/harness.js";
import type { Queryable } from "../store/db.js";
import type { FlagStore } from "../store/flags/flag-store.js";
import type { StallFactStore } from "../store/diagnosis/stall-fact-store.js";
import type { ApprovalFact, BridgeFact, FlagFact, QueueReading, StallFacts, StallFlags } from "./stall-facts.js";

export interface LocalStallFactsOptions {
  db: Queryable;
  redis: RedisClient;
  keyPrefix: string;
  /** This process's environment defaults (`config.flags`). */
  flagDefaults: FlagsConfig;
  /** How table `flags` is read (`stores.flags`). */
  flags: Pick<FlagStore, "list">;
  /** How the approval and bridge a stalled step waits on are read (`stores.stallFacts`). */
  facts: StallFactStore;
}

export function createLocalStallFacts(options: LocalStallFactsOptions): StallFacts {
  const { db, redis } = options;
  const { facts } = options;
  return {
    async flags() {
      return stallFlags(new FlagValues(options.flagDefaults, await options.flags.list(db)));
    },
    async queue(stream) {
      return readQueue(redis, streamKey(options.keyPrefix, stream));
    },
    approval(orgId, approvalId): Promise<ApprovalFact | undefined> {
      return facts.approval(db, orgId, approvalId);
    },
    bridge(orgId, taskId, stepId): Promise<BridgeFact | undefined> {
      return facts.bridge(db, orgId, taskId, stepId);
    },
  };
}

function stallFlags(values: FlagValues): StallFlags {
  const sourceOf = (name: FlagName, kind: ScopeKind, scope: string): FlagFact["source"] =>
    values.rows.some((row) => row.name === name && row.scopeKind === kind && row.scope === scope) ? "table" : "env";
  /** The first of the scopes (global first) that is off, as a fact. */
  const off = (name: FlagName, scopes: ReadonlyArray<[ScopeKind, string, string]>): FlagFact | undefined => {
    for (const [kind, scope, where] of scopes) {
      if (!values.value(name, kind, scope)) return { text: `${name} is off ${where}`, source: sourceOf(name, kind, scope) };
    }
    return undefined;
  };
  return {
    busOff: () => off("BUS_ENABLED", [["global", "", "globally"]]),
    tenantHeld: (orgId) => off("COORDINATOR_ENABLED", [["global", "", "globally"], ["tenant", orgId, `for tenant ${orgId}`]]),
    harnessOff: (kind, name) => off("HARNESS_ENABLED", [["global", "", "globally"], [kind, name, `for ${kind}:${name}`]]),
  };
}

/** XINFO GROUPS / CONSUMERS of the harness group; a missing stream or group reads as "never read". */
async function readQueue(redis: RedisClient, key: string): Promise<QueueReading> {
  let groups: unknown[];
  try {
    groups = (await redis.call("XINFO", "GROUPS", key)) as unknown[];
  } catch (error) {
    if (/no such key/i.test((error as Error).message)) return { groupExists: false, consumers: 0, idleMs: null, pending: 0, undelivered: null };
    throw error;
  }
  const group = groups.map(fields).find((g) => g.name === HARNESS_GROUP);
  if (!group) return { groupExists: false, consumers: 0, idleMs: null, pending: 0, undelivered: null };
  const consumers = ((await redis.call("XINFO", "CONSUMERS", key, HARNESS_GROUP)) as unknown[]).map(fields);
  // `inactive` (Redis 7.2+) is the time since the last successful read; `idle` also counts attempts.
  const idle = consumers.map((c) => Number(c.inactive ?? c.idle)).filter((n) => Number.isFinite(n) && n >= 0);
  const lag = group.lag === null || group.lag === undefined ? null : Number(group.lag);
  return {
    groupExists: true,
    consumers: consumers.length,
    idleMs: idle.length > 0 ? Math.min(...idle) : null,
    pending: Number(group.pending ?? 0),
    undelivered: lag !== null && Number.isFinite(lag) ? lag : null,
  };
}

/** Redis' flat [field, value, field, value, …] reply as an object. */
function fields(reply: unknown): Record<string, unknown> {
  const list = reply as unknown[];
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < list.length; i += 2) out[String(list[i])] = list[i + 1];
  return out;
}

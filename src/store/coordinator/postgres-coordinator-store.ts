/**
 * The Postgres adapters of the coordinator's storage ports (coordinator-store.ts beside this), wired from the
 * adapter of each table. runtime.ts builds one (`runtime.stores.coordinator`); the coordinator imports no SQL.
 */
import { withTransaction } from "../db.js";
import { claimStaleOutbox, deleteOutbox } from "../engine/postgres-outbox-store.js";
import { createPostgresShardStore } from "../shards/postgres-shard-store.js";
import type { CoordinatorStore } from "./coordinator-store.js";
import { createPostgresSweepStore } from "./postgres-sweep-store.js";
import { loadTaskOwners } from "./postgres-task-owners.js";

export function createPostgresCoordinatorStore(): CoordinatorStore {
  return {
    shards: createPostgresShardStore(),
    sweeps: createPostgresSweepStore(),
    taskOwners: { owners: loadTaskOwners },
    outbox: { transaction: withTransaction, claimStale: claimStaleOutbox, delete: deleteOutbox },
  };
}

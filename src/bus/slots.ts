/**
 * Grouping keys by Redis Cluster slot. A cluster refuses a multi-key command across slots (CROSSSLOT) and ioredis
 * a pipeline across nodes; commands grouped by slot are always accepted, wherever the slots move.
 * On a single Redis everything is one group, so callers keep their single round trip.
 */
import calculateSlot from "cluster-key-slot";
import { isCluster, type RedisClient } from "./redis-connection.js";

/** `items` grouped by the slot of `keyOf(item)`, in first-seen order; one group when `redis` is not a cluster. */
export function groupBySlot<T>(redis: RedisClient, items: readonly T[], keyOf: (item: T) => string): T[][] {
  if (!isCluster(redis)) return items.length > 0 ? [[...items]] : [];
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const slot = calculateSlot(keyOf(item));
    const group = groups.get(slot);
    if (group) group.push(item);
    else groups.set(slot, [item]);
  }
  return [...groups.values()];
}

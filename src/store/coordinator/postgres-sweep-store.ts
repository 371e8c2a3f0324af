/**
 * What the coordinator's sweeps read (SweepStore, coordinator-store.ts): due steps and stranded steps of the
 * tenants and shards a coordinator serves, and the outage probe. One SQL operation per function.
 */
import { tenantSqlClause, tenantSqlFilter } from "../../flags/flag-types.js";
import { shardSqlClause, shardSqlParams } from "../../bus/shards.js";
import type { Queryable } from "../db.js";
import type { DueStep, DueStepQuery, StrandedStepQuery, StrandedTask, SweepStore } from "./coordinator-store.js";
import { trimProcessedEnvelopes } from "../engine/postgres-envelope-store.js";

/** Steps whose timeout or retry backoff has come: dispatched, retrying or waiting with `due_at_ms` passed. */
export async function loadDueSteps(db: Queryable, query: DueStepQuery): Promise<DueStep[]> {
  const { only, except, none } = tenantSqlFilter(query.tenants);
  if (none || query.shards?.owned.length === 0) return [];
  const { rows } = await db.query<{ org_id: string; task_id: string; step_id: string; attempt: number; due_at_ms: number }>(
    `SELECT org_id, task_id, step_id, attempt, due_at_ms FROM steps
     WHERE status IN ('dispatched', 'retrying', 'waiting') AND due_at_ms <= $1
       AND ${tenantSqlClause("org_id", 2)} AND ${shardSqlClause("org_id", 4)}
     ORDER BY due_at_ms LIMIT ${query.limit}`,
    [query.nowMs, only, except, ...shardSqlParams(query.shards)],
  );
  return rows.map((r) => ({ orgId: r.org_id, taskId: r.task_id, stepId: r.step_id, attempt: r.attempt, dueAtMs: r.due_at_ms }));
}

/**
 * Open tasks with at least one stranded step, oldest first. A step counts once it and each of its needs were
 * last written over `quietMs` ago, which keeps the query off steps the engine is moving right now.
 */
export async function findStrandedSteps(db: Queryable, query: StrandedStepQuery): Promise<StrandedTask[]> {
  const { only, except, none } = tenantSqlFilter(query.tenants);
  if (none || query.shards?.owned.length === 0) return [];
  const { rows } = await db.query<{ org_id: string; task_id: string; step_ids: string[] }>(
    `SELECT p.org_id, p.task_id, array_agg(p.step_id ORDER BY p.step_id) AS step_ids
     FROM steps p
     JOIN tasks t ON t.id = p.task_id AND t.status IN ('running', 'parked')
     JOIN workflows w ON w.org_id = t.org_id AND w.name = t.workflow_name AND w.version = t.workflow_version
     CROSS JOIN LATERAL (SELECT d FROM jsonb_array_elements(w.definition->'steps') d WHERE d->>'id' = p.step_id) def
     WHERE p.status = 'pending' AND p.kind = 'workflow'
       AND p.updated_at < now() - make_interval(secs => $1::double precision / 1000)
       -- A first step (no needs) is dispatched by its task's start event, which may wait its turn in the shard's
       -- inbox behind a backlog (a start is an inbox event since issue 11): such a step counts only after a much
       -- longer quiet time ($7), so a busy inbox is not taken for a lost transition.
       AND (jsonb_array_length(coalesce(def.d->'needs', '[]'::jsonb)) > 0
            OR p.updated_at < now() - make_interval(secs => $7::double precision / 1000))
       AND ${tenantSqlClause("p.org_id", 3)} AND ${shardSqlClause("p.org_id", 5)}
       AND NOT EXISTS (
         SELECT 1 FROM jsonb_array_elements_text(def.d->'needs') n(need)
         WHERE NOT EXISTS (
           SELECT 1 FROM steps q WHERE q.task_id = p.task_id AND q.step_id = n.need AND q.status = 'completed'
             AND q.updated_at < now() - make_interval(secs => $1::double precision / 1000)))
     GROUP BY p.org_id, p.task_id
     ORDER BY min(t.created_at)
     LIMIT $2`,
    [query.quietMs, query.limit, only, except, ...shardSqlParams(query.shards), query.firstStepQuietMs],
  );
  return rows.map((r) => ({ orgId: r.org_id, taskId: r.task_id, stepIds: r.step_ids }));
}

/** Asks Postgres something trivial: resolves once it answers, throws while it cannot be reached. */
export async function probe(db: Queryable): Promise<void> {
  await db.query("SELECT 1");
}

export function createPostgresSweepStore(): SweepStore {
  return { dueSteps: loadDueSteps, strandedTasks: findStrandedSteps, probe, trimProcessedEnvelopes };
}

/**
 * Workflow definitions at rest: versioned per (tenant, name), immutable once written. A submission identical to an
 * existing version (same digest) returns that version instead of minting a new one.
 */
import type { WorkflowDefinition } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import {
  WORKFLOW_NAME_PATTERN,
  canonicalDefinition,
  definitionDigest,
  parseWorkflowDefinition,
  workflowToSource,
} from "../workflow/definition.js";
import { withTransaction, type Pool, type Queryable } from "./db.js";

// First key of the two-key advisory lock: keeps workflow submissions apart from every other lock user.
const SUBMIT_LOCK_NAMESPACE = 0x5759_4b46;

export interface SubmittedWorkflow {
  name: string;
  version: number;
  /** `name@version` */
  ref: string;
  digest: string;
  /** False when an identical definition was already stored and its version is returned. */
  created: boolean;
}

export interface StoredWorkflow {
  name: string;
  version: number;
  ref: string;
  digest: string;
  definition: WorkflowDefinition;
  createdAt: Date;
}

export interface WorkflowSummary {
  name: string;
  /** The latest version. */
  version: number;
  ref: string;
  /** How many versions exist. */
  versions: number;
  description?: string;
  createdAt: Date;
}

export interface WorkflowRef {
  name: string;
  /** null: the latest version. */
  version: number | null;
}

export function formatWorkflowRef(name: string, version: number): string {
  return `${name}@${version}`;
}

/** Reads `name`, `name@latest` or `name@3`. Throws INVALID_ARGUMENT for anything else. */
export function parseWorkflowRef(ref: string): WorkflowRef {
  const at = ref.lastIndexOf("@");
  const name = at < 0 ? ref : ref.slice(0, at);
  const version = at < 0 ? "latest" : ref.slice(at + 1);
  if (!WORKFLOW_NAME_PATTERN.test(name) || !(version === "latest" || /^[1-9]\d{0,8}$/.test(version))) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `invalid workflow reference "${ref}": expected NAME or NAME@VERSION`, {
      details: { path: "ref", reason: "expected NAME or NAME@VERSION" },
    });
  }
  return { name, version: version === "latest" ? null : Number(version) };
}

/**
 * Stores a definition as the next version of its name, or returns the existing version when an identical one is
 * stored. The definition is validated again (callers may build one by hand) and stored in canonical form.
 */
export async function submitWorkflow(pool: Pool, orgId: string, def: WorkflowDefinition): Promise<SubmittedWorkflow> {
  return withTransaction(pool, (client) => submitWorkflowIn(client, orgId, def));
}

/**
 * Submits inside the caller's transaction — e.g. a tenant-scoped one, so API traffic writes under row-level
 * security.
 */
export async function submitWorkflowIn(client: Queryable, orgId: string, def: WorkflowDefinition): Promise<SubmittedWorkflow> {
  requireOrg(orgId);
  const definition = canonicalDefinition(parseWorkflowDefinition(workflowToSource(def)));
  const digest = definitionDigest(definition);
  const { name } = definition;
  // Serialises submitters of one (tenant, name) so "max + 1" cannot hand the same version out twice.
  await client.query("SELECT pg_advisory_xact_lock($1::int, hashtext($2 || '/' || $3))", [SUBMIT_LOCK_NAMESPACE, orgId, name]);
  const existing = await client.query<{ version: number }>(
    "SELECT version FROM workflows WHERE org_id = $1 AND name = $2 AND digest = $3",
    [orgId, name, digest],
  );
  if (existing.rows[0]) {
    const version = existing.rows[0].version;
    return { name, version, ref: formatWorkflowRef(name, version), digest, created: false };
  }
  const inserted = await client.query<{ version: number }>(
    `INSERT INTO workflows (org_id, name, version, definition, digest)
     SELECT $1, $2, COALESCE(max(version), 0) + 1, $3, $4 FROM workflows WHERE org_id = $1 AND name = $2
     RETURNING version`,
    [orgId, name, JSON.stringify(definition), digest],
  );
  const version = inserted.rows[0]!.version;
  return { name, version, ref: formatWorkflowRef(name, version), digest, created: true };
}

/** Loads `name` (latest) or `name@version`. Throws NOT_FOUND naming what exists instead. */
export async function getWorkflow(db: Queryable, orgId: string, ref: string): Promise<StoredWorkflow> {
  requireOrg(orgId);
  const wanted = parseWorkflowRef(ref);
  const { rows } = await db.query<{ name: string; version: number; digest: string; definition: WorkflowDefinition; created_at: Date }>(
    wanted.version === null
      ? `SELECT name, version, digest, definition, created_at FROM workflows
         WHERE org_id = $1 AND name = $2 ORDER BY version DESC LIMIT 1`
      : `SELECT name, version, digest, definition, created_at FROM workflows
         WHERE org_id = $1 AND name = $2 AND version = $3`,
    wanted.version === null ? [orgId, wanted.name] : [orgId, wanted.name, wanted.version],
  );
  const row = rows[0];
  if (row) {
    return {
      name: row.name,
      version: row.version,
      ref: formatWorkflowRef(row.name, row.version),
      digest: row.digest,
      definition: row.definition,
      createdAt: row.created_at,
    };
  }
  let message = `workflow "${wanted.name}" not found in org "${orgId}"`;
  if (wanted.version !== null) {
    const latest = await db.query<{ version: number | null }>(
      "SELECT max(version) AS version FROM workflows WHERE org_id = $1 AND name = $2",
      [orgId, wanted.name],
    );
    const known = latest.rows[0]?.version;
    if (known != null) message = `workflow version ${formatWorkflowRef(wanted.name, wanted.version)} not found; the latest is ${formatWorkflowRef(wanted.name, known)}`;
  }
  throw new SwitchyardError(ErrorCode.NotFound, message, { details: { orgId, ref } });
}

/** One entry per workflow name, describing its latest version, ordered by name. */
export async function listWorkflows(db: Queryable, orgId: string): Promise<WorkflowSummary[]> {
  requireOrg(orgId);
  const { rows } = await db.query<{ name: string; version: number; versions: number; description: string | null; created_at: Date }>(
    `SELECT DISTINCT ON (name) name, version, count(*) OVER (PARTITION BY name)::int AS versions,
            definition->>'description' AS description, created_at
     FROM workflows WHERE org_id = $1 ORDER BY name, version DESC`,
    [orgId],
  );
  return rows.map((r) => ({
    name: r.name,
    version: r.version,
    ref: formatWorkflowRef(r.name, r.version),
    versions: r.versions,
    ...(r.description != null ? { description: r.description } : {}),
    createdAt: r.created_at,
  }));
}

export interface WorkflowCacheOptions {
  /** Entries kept before the least recently used is dropped. @defaultValue 1000 */
  maxEntries?: number;
}

/**
 * Definitions by (tenant, name, version). Versions are immutable, so an entry never goes stale; the bound only
 * caps memory. Concurrent misses for one key share a single load; a failed load is not cached.
 */
export class WorkflowCache {
  private readonly entries = new Map<string, Promise<WorkflowDefinition>>();
  private readonly maxEntries: number;

  constructor(
    private readonly db: Queryable,
    options: WorkflowCacheOptions = {},
  ) {
    this.maxEntries = Math.max(1, options.maxEntries ?? 1000);
  }

  get size(): number {
    return this.entries.size;
  }

  /** The definition of `name@version`; it is frozen because every caller shares it. */
  /** `db` lets a caller inside a transaction load through its own client (see PolicyCache.get). */
  get(orgId: string, name: string, version: number, db: Queryable = this.db): Promise<WorkflowDefinition> {
    if (!Number.isInteger(version) || version < 1) {
      return Promise.reject(new SwitchyardError(ErrorCode.InvalidArgument, `workflow version must be a positive integer, got ${version}`));
    }
    const key = JSON.stringify([orgId, name, version]);
    const hit = this.entries.get(key);
    if (hit) {
      // Re-inserting moves the key to the end of the Map's order: the front is always least recently used.
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    const loading = getWorkflow(db, orgId, formatWorkflowRef(name, version)).then((w) => deepFreeze(w.definition));
    this.entries.set(key, loading);
    loading.catch(() => {
      if (this.entries.get(key) === loading) this.entries.delete(key);
    });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    return loading;
  }

  clear(): void {
    this.entries.clear();
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

function requireOrg(orgId: string): void {
  if (typeof orgId !== "string" || orgId.length === 0) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, "orgId is required", { details: { path: "orgId", reason: "is required" } });
  }
}

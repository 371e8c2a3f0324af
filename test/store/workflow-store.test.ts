import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { definitionDigest, parseWorkflowDefinition } from "../../src/workflow/definition.js";
import type { WorkflowDefinition } from "../../src/domain.js";
import { SwitchyardError } from "../../src/errors.js";
import { WorkflowCache, getWorkflow, listWorkflows, parseWorkflowRef, submitWorkflow } from "../../src/store/workflow-store.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

function chain(name: string, ...ids: string[]): WorkflowDefinition {
  return parseWorkflowDefinition({ name, steps: ids.map((id) => ({ id, to: "role:echo" })) });
}

async function rejection(promise: Promise<unknown>): Promise<SwitchyardError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SwitchyardError);
    return error as SwitchyardError;
  }
  return expect.unreachable("expected a rejection");
}

describe("workflow store", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("numbers versions per (org, name) from 1 and returns an identical resubmission's version", async () => {
    const first = await submitWorkflow(db.pool, "org-v", chain("flow", "a"));
    expect(first).toMatchObject({ name: "flow", version: 1, ref: "flow@1", created: true });
    const second = await submitWorkflow(db.pool, "org-v", chain("flow", "a", "b"));
    expect(second).toMatchObject({ version: 2, ref: "flow@2", created: true });

    const again = await submitWorkflow(db.pool, "org-v", chain("flow", "a"));
    expect(again).toEqual({ ...first, created: false });

    // Another tenant and another name start their own numbering.
    expect(await submitWorkflow(db.pool, "org-other", chain("flow", "a", "b"))).toMatchObject({ version: 1, created: true });
    expect(await submitWorkflow(db.pool, "org-v", chain("other", "a"))).toMatchObject({ version: 1, created: true });

    const { rows } = await db.pool.query("SELECT org_id, name, version FROM workflows WHERE org_id = 'org-v' ORDER BY name, version");
    expect(rows).toEqual([
      { org_id: "org-v", name: "flow", version: 1 },
      { org_id: "org-v", name: "flow", version: 2 },
      { org_id: "org-v", name: "other", version: 1 },
    ]);
  });

  it("treats a resubmission differing only in key and needs order as identical", async () => {
    const a = parseWorkflowDefinition("name: diamond\nsteps:\n  - {id: a, to: role:echo}\n  - {id: b, to: role:echo}\n  - {id: c, to: role:echo, needs: [a, b]}\n");
    const b = parseWorkflowDefinition("steps:\n  - {to: role:echo, id: a}\n  - {id: b, to: role:echo, needs: [a]}\n  - {needs: [b, a], id: c, to: role:echo}\nname: diamond\n");
    const first = await submitWorkflow(db.pool, "org-d", a);
    const second = await submitWorkflow(db.pool, "org-d", b);
    expect(second).toEqual({ ...first, created: false });
    expect(second.digest).toBe(definitionDigest(a));
  });

  it("gives five concurrent submitters of one name the distinct versions 1..5", async () => {
    const defs = [1, 2, 3, 4, 5].map((n) => chain("race", ...Array.from({ length: n }, (_, i) => `s${i}`)));
    const results = await Promise.all(defs.map((def) => submitWorkflow(db.pool, "org-race", def)));
    expect(results.every((r) => r.created)).toBe(true);
    expect(results.map((r) => r.version).sort()).toEqual([1, 2, 3, 4, 5]);
    // Each version holds the definition that was submitted for it.
    for (const [i, result] of results.entries()) {
      const stored = await getWorkflow(db.pool, "org-race", result.ref);
      expect(stored.definition.steps).toHaveLength(i + 1);
    }
  });

  it("lets concurrent identical submissions share one version", async () => {
    const def = chain("same-race", "x", "y");
    const results = await Promise.all([1, 2, 3, 4].map(() => submitWorkflow(db.pool, "org-same", def)));
    expect(new Set(results.map((r) => r.version))).toEqual(new Set([1]));
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });

  it("gets the latest version by name and a pinned version by name@version", async () => {
    const demo = parseWorkflowDefinition(await readFile(new URL("../../examples/workflows/demo.yaml", import.meta.url), "utf8"));
    const v1 = await submitWorkflow(db.pool, "org-get", demo);
    const v2 = await submitWorkflow(db.pool, "org-get", { ...demo, budget: 200 });

    const latest = await getWorkflow(db.pool, "org-get", "research-report");
    expect(latest).toMatchObject({ name: "research-report", version: v2.version, ref: "research-report@2", digest: v2.digest });
    expect(latest.definition).toEqual({ ...demo, budget: 200 });
    expect(latest.createdAt).toBeInstanceOf(Date);
    expect((await getWorkflow(db.pool, "org-get", "research-report@latest")).version).toBe(2);

    const pinned = await getWorkflow(db.pool, "org-get", `research-report@${v1.version}`);
    expect(pinned.version).toBe(1);
    expect(pinned.definition).toEqual(demo);
    expect(definitionDigest(pinned.definition)).toBe(v1.digest);
  });

  it("throws NOT_FOUND with a clear message, and never shows another tenant's workflows", async () => {
    await submitWorkflow(db.pool, "org-nf", chain("present", "a"));
    const missing = await rejection(getWorkflow(db.pool, "org-nf", "absent"));
    expect(missing.code).toBe("NOT_FOUND");
    expect(missing.message).toBe('workflow "absent" not found in org "org-nf"');

    const pinned = await rejection(getWorkflow(db.pool, "org-nf", "present@7"));
    expect(pinned.code).toBe("NOT_FOUND");
    expect(pinned.message).toBe("workflow version present@7 not found; the latest is present@1");

    expect((await rejection(getWorkflow(db.pool, "org-elsewhere", "present"))).code).toBe("NOT_FOUND");
    expect(await listWorkflows(db.pool, "org-elsewhere")).toEqual([]);
  });

  it("rejects malformed references and definitions", async () => {
    for (const ref of ["", "Bad", "x@0", "x@-1", "x@1.5", "x@", "@1"]) {
      expect((await rejection(getWorkflow(db.pool, "org-bad", ref))).code).toBe("INVALID_ARGUMENT");
    }
    expect(parseWorkflowRef("a-b@12")).toEqual({ name: "a-b", version: 12 });
    expect(parseWorkflowRef("a-b")).toEqual({ name: "a-b", version: null });

    const broken = { ...chain("broken", "a") } as WorkflowDefinition;
    broken.steps = [{ ...broken.steps[0]!, retries: 99 }];
    const invalid = await rejection(submitWorkflow(db.pool, "org-bad", broken));
    expect(invalid.code).toBe("INVALID_WORKFLOW");
    expect(invalid.details.path).toBe("steps[0].retries");
    expect((await rejection(submitWorkflow(db.pool, "", chain("x", "a")))).code).toBe("INVALID_ARGUMENT");
  });

  it("lists one entry per name with its latest version", async () => {
    await submitWorkflow(db.pool, "org-list", chain("beta", "a"));
    await submitWorkflow(db.pool, "org-list", parseWorkflowDefinition({ name: "alpha", description: "first", steps: [{ id: "a", to: "role:r" }] }));
    await submitWorkflow(db.pool, "org-list", chain("beta", "a", "b"));
    const list = await listWorkflows(db.pool, "org-list");
    expect(list.map(({ createdAt, ...rest }) => (expect(createdAt).toBeInstanceOf(Date), rest))).toEqual([
      { name: "alpha", version: 1, ref: "alpha@1", versions: 1, description: "first" },
      { name: "beta", version: 2, ref: "beta@2", versions: 2 },
    ]);
  });

  it("keeps stored versions immutable: a new definition never changes an old version", async () => {
    const v1 = await submitWorkflow(db.pool, "org-imm", chain("imm", "a"));
    const before = await getWorkflow(db.pool, "org-imm", v1.ref);
    await submitWorkflow(db.pool, "org-imm", chain("imm", "a", "b"));
    expect(await getWorkflow(db.pool, "org-imm", v1.ref)).toEqual(before);
  });
});

describe("WorkflowCache", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("loads once, serves from memory after, and freezes what it shares", async () => {
    const { version } = await submitWorkflow(db.pool, "org-c", chain("cached", "a", "b"));
    let queries = 0;
    const counting = { query: ((...args: Parameters<typeof db.pool.query>) => (queries++, db.pool.query(...args))) as typeof db.pool.query };
    const cache = new WorkflowCache(counting);
    const [a, b] = await Promise.all([cache.get("org-c", "cached", version), cache.get("org-c", "cached", version)]);
    expect(a).toBe(b);
    expect(a.steps.map((s) => s.id)).toEqual(["a", "b"]);
    expect(queries).toBe(1);
    expect(await cache.get("org-c", "cached", version)).toBe(a);
    expect(queries).toBe(1);
    expect(Object.isFrozen(a.steps[0]!.needs)).toBe(true);
    // Tenants are part of the key.
    expect((await rejection(cache.get("org-other", "cached", version))).code).toBe("NOT_FOUND");
  });

  it("does not cache a failed load and stays within its bound, dropping the least recently used", async () => {
    const cache = new WorkflowCache(db.pool, { maxEntries: 2 });
    expect((await rejection(cache.get("org-b", "later", 1))).code).toBe("NOT_FOUND");
    expect(cache.size).toBe(0);
    await submitWorkflow(db.pool, "org-b", chain("later", "a"));
    expect((await cache.get("org-b", "later", 1)).name).toBe("later");

    await submitWorkflow(db.pool, "org-b", chain("two", "a"));
    await submitWorkflow(db.pool, "org-b", chain("three", "a"));
    const later = await cache.get("org-b", "later", 1);
    await cache.get("org-b", "two", 1);
    expect(await cache.get("org-b", "later", 1)).toBe(later); // touch: "two" is now least recently used
    await cache.get("org-b", "three", 1);
    expect(cache.size).toBe(2);
    expect(await cache.get("org-b", "later", 1)).toBe(later);
    expect((await rejection(cache.get("org-b", "x", 0))).code).toBe("INVALID_ARGUMENT");
  });
});

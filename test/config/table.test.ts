/**
 * The configuration tables in README.md and deploy/README.md are generated from the schema: `npm test` fails when
 * a committed table is stale (CI checks the same with `npm run docs:config`), or when a group of variables is in
 * no README table.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { patternVariables, variables } from "../../src/config/load.js";
import { ALL_GROUPS, CONFIG_TABLE_FILES, markedGroups, renderConfigTable, rewriteConfigTables } from "../../src/config/table.js";

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");

describe("configuration tables", () => {
  it.each(CONFIG_TABLE_FILES)("$path is what `npm run docs:config` writes", ({ path, linkBase }) => {
    const text = read(path);
    expect(markedGroups(text).length).toBeGreaterThan(0);
    // On failure: run `npm run docs:config` and commit the result.
    expect(rewriteConfigTables(text, linkBase)).toBe(text);
  });

  it("README.md shows every group, each once, so every variable is documented exactly once", () => {
    const groups = markedGroups(read("README.md"));
    expect([...groups].sort()).toEqual([...ALL_GROUPS].sort());
    const all = renderConfigTable({ groups: ALL_GROUPS });
    for (const name of [...variables.map((v) => v.name), ...patternVariables.map((p) => p.name)]) expect(all).toContain(`| \`${name}\` |`);
  });

  it("rewrites only what is between markers, and refuses a marker naming an unknown group", () => {
    const stale = "intro\n<!-- config-table groups=shards -->\n| old |\n<!-- /config-table -->\noutro\n";
    const fresh = rewriteConfigTables(stale);
    expect(fresh.startsWith("intro\n<!-- config-table groups=shards -->\n| variable | default | accepts | meaning |\n")).toBe(true);
    expect(fresh).toContain("| `SWITCHYARD_SHARD_COUNT` | `64` | integer 1–1024 |");
    expect(fresh.endsWith("<!-- /config-table -->\noutro\n")).toBe(true);
    expect(rewriteConfigTables(fresh)).toBe(fresh);
    expect(() => rewriteConfigTables("<!-- config-table groups=nope -->\n<!-- /config-table -->")).toThrow(/unknown or missing groups nope/);
  });

  it("rewrites README links for a file in another folder and adds the read-by column on request", () => {
    const table = renderConfigTable({ groups: ["coordinator"], readBy: true, linkBase: "../README.md" });
    expect(table.split("\n")[0]).toBe("| variable | read by | default | accepts | meaning |");
    expect(table).toContain("([Approvals](../README.md#approvals))");
    expect(table).toContain("| `SWITCHYARD_DEDUPE_RETENTION_MS` | coordinator | `604800000` (7 d) | integer ≥ 3600000 |");
  });
});

/**
 * The configuration tables of README.md and deploy/README.md, written from the schema (`npm run docs:config`), so
 * the documentation cannot drift from what is checked. A table sits between markers naming its groups:
 *
 *   <!-- config-table groups=connections,bus read-by -->
 *   …generated…
 *   <!-- /config-table -->
 *
 * `read-by` adds the column of processes that read each variable (deploy/README.md).
 */
import { patternVariables, variables } from "./load.js";
import type { Group } from "./variable.js";

interface Row {
  name: string;
  group: string;
  readBy: readonly string[];
  defaultText: string;
  accepts: string;
  doc: string;
}

export interface TableOptions {
  groups: readonly Group[];
  readBy?: boolean;
  /** Prefix of README anchors (`#flags` → `../README.md#flags` for a file in deploy/). */
  linkBase?: string;
}

const MARKER = /<!-- config-table ([^>]*?)-->\n[\s\S]*?<!-- \/config-table -->/g;

export const ALL_GROUPS: readonly Group[] = [...new Set([...variables.map((v) => v.group), ...patternVariables.map((p) => p.group)])];

/** Rewrites every marked table of `markdown`; unmarked text is left exactly as it was. */
export function rewriteConfigTables(markdown: string, linkBase = ""): string {
  return markdown.replace(MARKER, (_whole, attributes: string) => {
    const options = parseMarker(attributes);
    return `<!-- config-table ${attributes}-->\n${renderConfigTable({ ...options, linkBase })}<!-- /config-table -->`;
  });
}

/** The groups each marked table of `markdown` shows. */
export function markedGroups(markdown: string): Group[] {
  return [...markdown.matchAll(MARKER)].flatMap((match) => parseMarker(match[1]!).groups);
}

export function renderConfigTable(options: TableOptions): string {
  const rows = allRows().filter((row) => (options.groups as readonly string[]).includes(row.group));
  const head = options.readBy ? ["variable", "read by", "default", "accepts", "meaning"] : ["variable", "default", "accepts", "meaning"];
  const lines = [`| ${head.join(" | ")} |`, `| ${head.map(() => "---").join(" | ")} |`];
  for (const row of rows) {
    const cells = [`\`${row.name}\``, ...(options.readBy ? [row.readBy.join(", ")] : []), row.defaultText, row.accepts, links(row.doc, options.linkBase ?? "")];
    lines.push(`| ${cells.map(escapeCell).join(" | ")} |`);
  }
  return `${lines.join("\n")}\n`;
}

function allRows(): Row[] {
  const named: Row[] = variables.map((v) => ({
    name: v.name,
    group: v.group,
    readBy: v.readBy,
    defaultText: v.defaultText ?? defaultText(v.name, v.fallback),
    accepts: v.accepts,
    doc: v.doc,
  }));
  const patterns: Row[] = patternVariables.map((p) => ({ ...p }));
  // Groups stay together in the order they first appear; within one, table (schema) order.
  const order = ALL_GROUPS as readonly string[];
  return [...named, ...patterns].map((row, index) => ({ row, index })).sort((a, b) => order.indexOf(a.row.group) - order.indexOf(b.row.group) || a.index - b.index).map((x) => x.row);
}

function parseMarker(attributes: string): Required<Pick<TableOptions, "groups" | "readBy">> {
  const words = attributes.trim().split(/\s+/);
  const groups = (words.find((w) => w.startsWith("groups="))?.slice("groups=".length) ?? "").split(",").filter(Boolean) as Group[];
  const unknown = groups.filter((g) => !ALL_GROUPS.includes(g));
  if (groups.length === 0 || unknown.length > 0) throw new Error(`config-table marker "${attributes.trim()}": unknown or missing groups ${unknown.join(", ")}`);
  return { groups, readBy: words.includes("read-by") };
}

function defaultText(name: string, value: unknown): string {
  if (value === null || (Array.isArray(value) && value.length === 0)) return "(none)";
  if (value === "") return "(empty)";
  if (typeof value === "number" && /_MS$/.test(name) && value >= 60_000) return `\`${value}\` (${duration(value)})`;
  return `\`${String(value)}\``;
}

function duration(ms: number): string {
  for (const [unit, size] of [["d", 86_400_000], ["h", 3_600_000], ["min", 60_000]] as const) {
    if (ms % size === 0) return `${ms / size} ${unit}`;
  }
  return `${ms / 1000} s`;
}

function links(doc: string, base: string): string {
  return base === "" ? doc : doc.replace(/\]\(#/g, `](${base}#`);
}

function escapeCell(cell: string): string {
  return cell.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

/** The files holding marked tables, with the prefix their README links need. */
export const CONFIG_TABLE_FILES: ReadonlyArray<{ path: string; linkBase: string }> = [
  { path: "README.md", linkBase: "" },
  { path: "deploy/README.md", linkBase: "../README.md" },
];

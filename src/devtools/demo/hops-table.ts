/**
 * The demo's closing table: every audit row of one task in seq order, with the time since the task's previous
 * row, so a newcomer sees each hop pass the choke-point (policy verdict, rule, cost) and how long it took.
 */
import type { AuditRow } from "../../domain.js";
import { formatTable } from "../../cli/output.js";

export const HOP_COLUMNS = ["seq", "step", "action", "actor", "destination", "verdict", "rule", "cost", "+ms"] as const;

/** Rows must be one task's, in seq order; `+ms` of the first row is 0. */
export function hopRows(rows: readonly AuditRow[]): Array<[number, string, string, string, string, string, string, number, string]> {
  return rows.map((row, i) => {
    const previous = i > 0 ? rows[i - 1]!.atMs : row.atMs;
    return [row.seq, row.stepId || "-", row.action, row.actor, row.destination || "-", row.verdict, row.rule || "-", row.cost, `+${Math.max(0, row.atMs - previous)}`];
  });
}

export function formatHopsTable(rows: readonly AuditRow[]): string {
  return formatTable(HOP_COLUMNS, hopRows(rows));
}

/** A task's (or tenant's) audit rows as the demo's hop table: seq, time, action, verdict, rule, actor, cost, time to the next row. */
import type { AuditRow } from "../../../src/gen/switchyard/api/v1/audit_pb.js";
import { formatCost, formatDuration, formatMs } from "../format";
import { Table } from "../components/table";

export function AuditTable({ rows }: { rows: AuditRow[] }) {
  if (rows.length === 0) return <p class="hint">No audit rows yet.</p>;
  return (
    <Table class="audit" headers={["Seq", "At", "Step", "Action", "Verdict", "Rule", "Actor", "Destination", "Cost", "Latency"]}>
      {rows.map((r, i) => {
        const next = rows[i + 1];
        return (
          <tr data-seq={String(r.seq)}>
            <td>{String(r.seq)}</td>
            <td>{formatMs(r.atMs)}</td>
            <td>{r.stepId}</td>
            <td>{r.action}</td>
            <td class={`verdict verdict-${r.verdict}`}>{r.verdict}</td>
            <td>{r.rule}</td>
            <td>{r.actor}</td>
            <td>{r.destination}</td>
            <td>{formatCost(r.cost)}</td>
            <td>{next ? formatDuration(Number(next.atMs - r.atMs)) : "—"}</td>
          </tr>
        );
      })}
    </Table>
  );
}

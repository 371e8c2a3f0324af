/**
 * Audit: verify the tenant's chain (optionally against an exported checkpoints file the person picks), the signed
 * checkpoints, and the latest rows.
 */
import { useState } from "preact/hooks";
import type { AuditServiceVerifyResponse } from "../../../src/gen/switchyard/api/v1/audit_pb.js";
import { ProblemBox } from "../components/problem";
import { useAction, useLoad } from "../components/use-load";
import { useConsole } from "../context";
import { formatMs } from "../format";
import { AuditTable } from "./task-audit";
import { Table } from "../components/table";

export function AuditPage() {
  const { api, tenant } = useConsole();
  const action = useAction();
  const [result, setResult] = useState<AuditServiceVerifyResponse | undefined>(undefined);
  const checkpoints = useLoad((signal) => api.audit.listCheckpoints({}, { signal }), [api, tenant]);
  const rows = useLoad((signal) => api.audit.listRows({ limit: 50, newestFirst: true }, { signal }), [api, tenant]);
  const verify = (event: Event) => {
    event.preventDefault();
    const file = ((event.target as HTMLFormElement).elements.namedItem("checkpoints") as HTMLInputElement).files?.[0];
    void action.run(async () => {
      const checkpointsJsonl = file ? await file.text() : "";
      setResult(await api.audit.verify({ checkpointsJsonl, checkpointsSource: file?.name ?? "" }));
    });
  };
  const latest = [...(rows.data?.rows ?? [])].reverse();
  return (
    <section>
      <h1>Audit</h1>
      <form class="inline-form" onSubmit={verify}>
        <label>
          Exported checkpoints (optional) <input type="file" name="checkpoints" accept=".jsonl,.json,.txt" />
        </label>
        <button type="submit" disabled={action.busy}>
          Verify the chain
        </button>
      </form>
      <ProblemBox problem={action.problem} />
      {result && (
        <p class={result.ok ? "verified ok" : "verified broken"} role="status" data-testid="verify-result">
          {result.ok
            ? `✓ The chain of ${result.orgId} verifies: ${result.rows} rows, head seq ${result.headSeq}`
            : `✗ The chain of ${result.orgId} is broken at seq ${result.firstBroken?.seq}: ${result.firstBroken?.reason}`}
          {result.checkpoints &&
            ` — checkpoints checked: ${result.checkpoints.table} stored${result.checkpoints.file !== undefined ? `, ${result.checkpoints.file} from the file` : ""}, signed up to seq ${result.checkpoints.signedSeq}`}
        </p>
      )}
      <h2>Signed checkpoints</h2>
      <ProblemBox problem={checkpoints.problem} />
      {checkpoints.data?.checkpoints.length === 0 && <p class="hint">No checkpoints yet.</p>}
      <Table headers={["Seq", "At", "Key", "Head hash"]}>
        {checkpoints.data?.checkpoints.map((c) => (
          <tr>
            <td>{String(c.seq)}</td>
            <td>{formatMs(c.atMs)}</td>
            <td>{c.kid}</td>
            <td>
              <code>{c.hash.slice(0, 16)}…</code>
            </td>
          </tr>
        ))}
      </Table>
      <h2>Latest rows</h2>
      <ProblemBox problem={rows.problem} />
      <AuditTable rows={latest} />
    </section>
  );
}

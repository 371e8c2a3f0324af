/**
 * Approvals: the inbox of parked hops (what is asked, by which rule, why, until when) with approve / deny and a
 * reason; below, the decided ones with who decided and how (api, cli, link, expiry). Refreshed every few seconds.
 */
import { useEffect } from "preact/hooks";
import type { Approval } from "../../../src/gen/switchyard/api/v1/approvals_pb.js";
import { ApprovalStatus } from "../../../src/gen/switchyard/api/v1/approvals_pb.js";
import { ProblemBox } from "../components/problem";
import { Status } from "../components/status";
import { useAction, useLoad } from "../components/use-load";
import { useConsole } from "../context";
import { approvalStatusWord, formatCost, formatTime } from "../format";
import { href } from "../router";
import { Table } from "../components/table";

const REFRESH_MS = 3000;

export function ApprovalsPage() {
  const { api } = useConsole();
  const list = useLoad((signal) => api.approvals.list({}, { signal }), [api]);
  useEffect(() => {
    const timer = setInterval(list.reload, REFRESH_MS);
    return () => clearInterval(timer);
  }, [list.reload]);
  const all = list.data?.approvals ?? [];
  const pending = all.filter((a) => a.status === ApprovalStatus.PENDING);
  const decided = all.filter((a) => a.status !== ApprovalStatus.PENDING).reverse();
  return (
    <section>
      <h1>Approvals</h1>
      <ProblemBox problem={list.problem} />
      <h2>Waiting ({pending.length})</h2>
      {pending.length === 0 && <p class="hint">Nothing is waiting for a decision.</p>}
      <div class="cards">
        {pending.map((a) => (
          <Pending approval={a} onDecided={list.reload} />
        ))}
      </div>
      <h2>Decided</h2>
      {decided.length === 0 && <p class="hint">None decided yet.</p>}
      <Table headers={["Approval", "Task / step", "Action", "Outcome", "By", "Via", "Reason", "At"]}>
        {decided.map((a) => (
          <tr data-approval={a.id}>
            <td>
              <code>{a.id}</code>
            </td>
            <td>
              <a href={href("tasks", a.taskId)}>{a.taskId}</a> / {a.stepId}
            </td>
            <td>
              {a.action} → {a.destination}
            </td>
            <td>
              <Status word={approvalStatusWord(a.status)} />
            </td>
            <td>{a.decidedBy ?? "—"}</td>
            <td>{a.decidedVia ?? "—"}</td>
            <td>{a.decisionReason ?? ""}</td>
            <td>{formatTime(a.decidedAt)}</td>
          </tr>
        ))}
      </Table>
    </section>
  );
}

function Pending({ approval: a, onDecided }: { approval: Approval; onDecided: () => void }) {
  const { api } = useConsole();
  const action = useAction();
  const decide = (approve: boolean) => (event: Event) => {
    const form = (event.target as HTMLButtonElement).form!;
    const reason = (form.elements.namedItem("reason") as HTMLInputElement).value;
    void action.run(async () => {
      await api.approvals.decide({ id: a.id, approve, reason, actor: "console" });
      onDecided();
    });
  };
  return (
    <article class="card" data-approval={a.id} aria-labelledby={`approval-${a.id}`}>
      <h3 id={`approval-${a.id}`}>
        {a.action} → {a.destination}
      </h3>
      <dl class="facts">
        <dt>Task / step</dt>
        <dd>
          <a href={href("tasks", a.taskId)}>{a.taskId}</a> / {a.stepId}
        </dd>
        <dt>Rule</dt>
        <dd>{a.rule}</dd>
        <dt>Why</dt>
        <dd>{a.reason}</dd>
        <dt>Cost</dt>
        <dd>{formatCost(a.cost)}</dd>
        <dt>Asked</dt>
        <dd>{formatTime(a.createdAt)}</dd>
        <dt>Expires</dt>
        <dd>{formatTime(a.expiresAt)}</dd>
      </dl>
      <form class="inline-form" onSubmit={(e) => e.preventDefault()}>
        <label>
          Reason <input name="reason" />
        </label>
        <button type="button" class="approve" disabled={action.busy} onClick={decide(true)}>
          Approve
        </button>
        <button type="button" class="danger" disabled={action.busy} onClick={decide(false)}>
          Deny
        </button>
      </form>
      <ProblemBox problem={action.problem} />
    </article>
  );
}

/** Dead letters: what the bus gave up on and why, with replay of one entry or of a whole stream. */
import { useState } from "preact/hooks";
import { ProblemBox } from "../components/problem";
import { useAction, useLoad } from "../components/use-load";
import { useConsole } from "../context";
import { formatMs } from "../format";
import { Table } from "../components/table";

export function DeadLetters() {
  const { api } = useConsole();
  const letters = useLoad((signal) => api.admin.listDeadLetters({ limit: 100 }, { signal }), [api]);
  const action = useAction();
  const [replayed, setReplayed] = useState<string | undefined>(undefined);
  const replay = (stream: string, ids: string[]) =>
    action.run(async () => {
      const { replayed: count } = await api.admin.replayDeadLetters({ stream, ids, all: ids.length === 0 });
      setReplayed(`Replayed ${count} ${count === 1 ? "entry" : "entries"} onto ${stream}.`);
      letters.reload();
    });
  const list = letters.data?.deadLetters ?? [];
  return (
    <section aria-labelledby="dlq-title">
      <h2 id="dlq-title">Dead letters ({list.length})</h2>
      <ProblemBox problem={letters.problem ?? action.problem} />
      {replayed && (
        <p role="status" class="ok">
          {replayed}
        </p>
      )}
      {list.length === 0 && <p class="hint">No dead letters.</p>}
      <Table headers={["Stream", "Entry", "Reason", "Deliveries", "At", "Envelope", "Replay"]}>
        {list.map((d) => (
          <tr data-dead-letter={d.id}>
            <td>{d.stream}</td>
            <td>
              <code>{d.id}</code>
            </td>
            <td>{d.reason}</td>
            <td>{d.deliveries}</td>
            <td>{formatMs(d.atMs)}</td>
            <td>{d.envelope ? `${d.envelope.kind} ${d.envelope.orgId}/${d.envelope.taskId}/${d.envelope.stepId}` : `${d.bytes} bytes (undecodable)`}</td>
            <td>
              <button type="button" disabled={action.busy} onClick={() => void replay(d.stream, [d.id])}>
                Replay
              </button>
            </td>
          </tr>
        ))}
      </Table>
    </section>
  );
}

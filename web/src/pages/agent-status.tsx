/** One agent's circuit breaker and recent bridges (ForeignAgentService.Status). */
import { ProblemBox } from "../components/problem";
import { useLoad } from "../components/use-load";
import { useConsole } from "../context";
import { formatTime } from "../format";
import { href } from "../router";
import { Table } from "../components/table";

const BREAKER_SHAPES: Record<string, string> = { closed: "● closed (calls flow)", open: "✗ open (calls refused)", half_open: "◐ half open (trying)", unknown: "? unknown here" };

export function AgentStatus({ agentKey }: { agentKey: string }) {
  const { api } = useConsole();
  const status = useLoad((signal) => api.foreignAgents.status({ agentKey, bridgeLimit: 10 }, { signal }), [api, agentKey]);
  const s = status.data;
  return (
    <>
      <ProblemBox problem={status.problem} />
      {s && (
        <>
          <p>
            Breaker: <strong class={`breaker breaker-${s.breaker}`}>{BREAKER_SHAPES[s.breaker] ?? s.breaker}</strong> · open bridges: {s.openBridges}
          </p>
          {s.bridges.length === 0 ? (
            <p class="hint">No bridges yet.</p>
          ) : (
            <Table class="bridges" headers={["Task / step", "State", "Via", "Updated"]}>
              {s.bridges.map((b) => (
                <tr data-bridge={b.id}>
                  <td>
                    <a href={href("tasks", b.taskId)}>{b.taskId.slice(0, 8)}…</a> / {b.stepId} #{b.attempt}
                  </td>
                  <td>
                    {b.status.replace(/_/g, " ")}
                    {b.lastState ? ` (${b.lastState})` : ""}
                  </td>
                  <td>
                    {b.dialect}
                    {b.delivery ? ` ${b.delivery}` : ""}
                  </td>
                  <td>{formatTime(b.updatedAt)}</td>
                </tr>
              ))}
            </Table>
          )}
        </>
      )}
    </>
  );
}

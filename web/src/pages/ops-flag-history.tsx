/** Every flag change, newest first, from the audit chains: who, why, and the chain and seq that record it. */
import { FlagScopeKind } from "../../../src/gen/switchyard/api/v1/admin_pb.js";
import { ProblemBox } from "../components/problem";
import { useLoad } from "../components/use-load";
import { useConsole } from "../context";
import { formatMs } from "../format";
import { Table } from "../components/table";

const SCOPE_WORDS: Record<number, string> = { [FlagScopeKind.GLOBAL]: "global", [FlagScopeKind.TENANT]: "tenant", [FlagScopeKind.ROLE]: "role", [FlagScopeKind.TEAM]: "team" };

/** `round` changes whenever a flag was switched here, so the history shows the switch at once. */
export function FlagHistory({ round }: { round: number }) {
  const { api } = useConsole();
  const history = useLoad((signal) => api.admin.listFlagHistory({ limit: 50 }, { signal }), [api, round]);
  const changes = history.data?.changes ?? [];
  return (
    <>
      <h3>Changes (newest first)</h3>
      <ProblemBox problem={history.problem} />
      <Table class="flag-history" headers={["At", "Flag", "Scope", "Set to", "By", "Reason", "Audit row"]}>
        {changes.map((c) => (
          <tr data-change={`${c.chain}#${c.seq}`}>
            <td>{formatMs(c.atMs)}</td>
            <td>{c.name}</td>
            <td>{c.scope ? `${SCOPE_WORDS[c.scopeKind] ?? "?"}:${c.scope}` : SCOPE_WORDS[c.scopeKind] ?? "?"}</td>
            <td>
              <span class={c.enabled ? "flag-on" : "flag-off"}>{c.enabled ? "● on" : "○ off"}</span>
            </td>
            <td>{c.actor}</td>
            <td>{c.reason}</td>
            <td>
              <code>
                {c.chain} #{String(c.seq)}
              </code>
            </td>
          </tr>
        ))}
      </Table>
    </>
  );
}

/**
 * Live flags: every row that overrides an environment default, each switchable with a required reason (audited
 * like `switchyard flags set`), a form to set any flag for any scope, and the history of changes.
 */
import { useState } from "preact/hooks";
import type { Flag } from "../../../src/gen/switchyard/api/v1/admin_pb.js";
import { FlagScopeKind } from "../../../src/gen/switchyard/api/v1/admin_pb.js";
import { ProblemBox } from "../components/problem";
import { useAction, useLoad } from "../components/use-load";
import { useConsole } from "../context";
import { formatTime } from "../format";
import { FlagHistory } from "./ops-flag-history";
import { Table } from "../components/table";

const FLAG_NAMES = ["BUS_ENABLED", "COORDINATOR_ENABLED", "HARNESS_ENABLED", "BUS_ROUTED", "A2A_EGRESS_ENABLED", "REPLY_ENABLED"];
const SCOPES: { word: string; kind: FlagScopeKind }[] = [
  { word: "global", kind: FlagScopeKind.GLOBAL },
  { word: "tenant", kind: FlagScopeKind.TENANT },
  { word: "role", kind: FlagScopeKind.ROLE },
  { word: "team", kind: FlagScopeKind.TEAM },
];

function scopeText(flag: Pick<Flag, "scopeKind" | "scope">): string {
  const word = SCOPES.find((s) => s.kind === flag.scopeKind)?.word ?? "?";
  return flag.scope ? `${word}:${flag.scope}` : word;
}

export function Flags() {
  const { api } = useConsole();
  const flags = useLoad((signal) => api.admin.listFlags({}, { signal }), [api]);
  const action = useAction();
  const [name, setName] = useState(FLAG_NAMES[0]!);
  const [kind, setKind] = useState(FlagScopeKind.GLOBAL);
  const [round, setRound] = useState(0);
  const set = (flag: { name: string; scopeKind: FlagScopeKind; scope: string }, enabled: boolean, form: HTMLFormElement) => {
    const input = form.elements.namedItem("reason") as HTMLInputElement;
    const reason = input.value.trim();
    if (!reason) {
      input.setCustomValidity("A reason is required: it is recorded with the change.");
      input.reportValidity();
      return;
    }
    input.setCustomValidity("");
    void action.run(async () => {
      await api.admin.setFlag({ ...flag, enabled, reason });
      input.value = "";
      flags.reload();
      setRound((r) => r + 1);
    });
  };
  return (
    <section aria-labelledby="flags-title">
      <h2 id="flags-title">Flags</h2>
      <ProblemBox problem={flags.problem ?? action.problem} />
      <Table class="flags" headers={["Flag", "Scope", "Value", "Last change", "Switch"]}>
        {flags.data?.flags.map((f) => (
          <tr data-flag={`${f.name}/${scopeText(f)}`}>
            <td>{f.name}</td>
            <td>{scopeText(f)}</td>
            <td>
              <span class={f.enabled ? "flag-on" : "flag-off"}>{f.enabled ? "● on" : "○ off"}</span>
            </td>
            <td>
              {formatTime(f.updatedAt)} by {f.updatedBy}
              {f.reason ? ` — ${f.reason}` : ""}
            </td>
            <td>
              <form class="inline-form" onSubmit={(e) => e.preventDefault()}>
                <label>
                  Reason <input name="reason" required />
                </label>
                <button type="button" disabled={action.busy} onClick={(e) => set(f, !f.enabled, (e.target as HTMLButtonElement).form!)}>
                  Turn {f.enabled ? "off" : "on"}
                </button>
              </form>
            </td>
          </tr>
        ))}
      </Table>
      <form
        class="inline-form"
        aria-label="Set a flag"
        onSubmit={(e) => {
          e.preventDefault();
          const form = e.target as HTMLFormElement;
          const scope = (form.elements.namedItem("scope") as HTMLInputElement).value.trim();
          const enabled = (form.elements.namedItem("enabled") as HTMLSelectElement).value === "on";
          set({ name, scopeKind: kind, scope: kind === FlagScopeKind.GLOBAL ? "" : scope }, enabled, form);
        }}
      >
        <label>
          Flag{" "}
          <select value={name} onChange={(e) => setName((e.target as HTMLSelectElement).value)}>
            {FLAG_NAMES.map((n) => (
              <option value={n}>{n}</option>
            ))}
          </select>
        </label>
        <label>
          Scope{" "}
          <select value={String(kind)} onChange={(e) => setKind(Number((e.target as HTMLSelectElement).value))}>
            {SCOPES.map((s) => (
              <option value={String(s.kind)}>{s.word}</option>
            ))}
          </select>
        </label>
        <label>
          Name <input name="scope" disabled={kind === FlagScopeKind.GLOBAL} />
        </label>
        <label>
          Value{" "}
          <select name="enabled">
            <option value="on">on</option>
            <option value="off">off</option>
          </select>
        </label>
        <label>
          Reason <input name="reason" required />
        </label>
        <button type="submit" disabled={action.busy}>
          Set flag
        </button>
      </form>
      <FlagHistory round={round} />
    </section>
  );
}
